import { expect } from 'chai';
import { performance } from 'node:perf_hooks';
import { compileSchema } from '../../plugin/validation/ajv';
import {
  schemaCostProblem,
  MAX_UNIQUE_ITEMS,
  FREE_BRANCHES,
  MAX_BRANCH_TESTS,
} from '../../plugin/validation/schema-cost';
import { toRe2Syntax } from '../../plugin/validation/linear-regexp';
import { stripWriteOnly } from '../../plugin/validation/write-only';
import { validateAnnouncement } from '../../plugin/contracts/announcement-validation';

/** How long `fn` takes, in ms. */
function timed(fn: () => unknown): number {
  const t0 = performance.now();
  fn();
  return performance.now() - t0;
}

const EVIL = '^(a+)+$';
const EVIL_INPUT = `${'a'.repeat(29)}!`; // 53 s on V8's backtracking engine

describe('validation: patterns on a linear-time engine', () => {
  it('checks an exponential pattern against 29 and 100,000 characters at once, in both roles', () => {
    for (const role of ['input', 'output'] as const) {
      const validate = compileSchema({ type: 'object', properties: { s: { type: 'string', pattern: EVIL } } }, role);
      expect(timed(() => expect(validate({ s: EVIL_INPUT })).to.equal(false))).to.be.below(500);
      expect(timed(() => expect(validate({ s: `${'a'.repeat(100_000)}!` })).to.equal(false))).to.be.below(2000);
      expect(validate({ s: 'aaaa' })).to.equal(true);
    }
  });

  it('runs patternProperties keys there too, in ajv and in the writeOnly stripping', () => {
    const schema = { type: 'object', patternProperties: { [EVIL]: { type: 'integer', writeOnly: true } } };
    const validate = compileSchema(schema, 'input');
    expect(
      timed(() => expect(validate({ [EVIL_INPUT]: 'not checked: the key does not match', aaa: 1 })).to.equal(true)),
    ).to.be.below(500);
    expect(validate({ aaa: 'x' })).to.equal(false);
    expect(
      timed(() => expect(stripWriteOnly({ [EVIL_INPUT]: 1, aaa: 2 }, schema)).to.deep.equal({ [EVIL_INPUT]: 1 })),
    ).to.be.below(500);
  });

  it('keeps the ECMAScript meaning of \\u, \\s and \\S', () => {
    const validate = compileSchema(
      {
        type: 'object',
        properties: {
          e: { type: 'string', pattern: '^\\u00e9\\u{1F600}$' },
          s: { type: 'string', pattern: '^a\\sb[\\s]c\\S$' },
          lit: { type: 'string', pattern: '^\\\\u0041$' },
        },
      },
      'input',
    );
    expect(validate({ e: 'é😀' })).to.equal(true);
    expect(validate({ e: 'e😀' })).to.equal(false);
    expect(validate({ s: 'a\u00a0b\u2003cx' })).to.equal(true); // no-break and em spaces are \s in ECMAScript
    expect(validate({ s: 'a b c\u00a0' })).to.equal(false);
    expect(validate({ lit: '\\u0041' })).to.equal(true); // an escaped backslash stays one
    expect(toRe2Syntax('[^\\s]\\d')).to.equal(
      '[^\\t\\n\\x{0B}\\f\\r \\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}]\\d',
    );
  });

  it("the reference users service's permission pattern still validates", () => {
    const validate = compileSchema({ type: 'string', pattern: '^[A-Za-z0-9_-]+:[A-Za-z0-9_*-]+$' }, 'input');
    expect(validate('users:read')).to.equal(true);
    expect(validate('users read')).to.equal(false);
  });
});

describe('validation: schemas too costly to check are refused at announcement', () => {
  it('names a pattern or patternProperties key the linear engine cannot run (lookaround, backreference)', () => {
    expect(schemaCostProblem({ properties: { a: { pattern: '^(?=.*\\d).+$' } } })).to.match(
      /^pattern "\^\(\?=\.\*\\\\d\)\.\+\$" cannot run on the linear-time engine \(.*\(\?=/,
    );
    expect(schemaCostProblem({ items: [{ patternProperties: { '(a)\\1': {} } }] })).to.match(
      /^patternProperties pattern .* cannot run on the linear-time engine/,
    );
    expect(
      schemaCostProblem({
        properties: { pattern: { type: 'string' } },
        examples: [{ pattern: '(?=' }],
        default: { pattern: '(?=' },
      }),
    ).to.equal(undefined);
  });

  it('bounds the RE2 program of one pattern and of all the patterns of a schema', () => {
    expect(schemaCostProblem({ pattern: '^(?:(?:a{1,10}){1,10}){1,10}$' })).to.match(
      /^pattern ".*" compiles to \d+ instructions, over 500$/,
    );
    expect(schemaCostProblem({ pattern: '^[a-z]{2,64}$' })).to.equal(undefined);
    const many: Record<string, unknown> = {};
    for (let i = 0; i < 40; i++) many[`p${i}`] = { type: 'string', pattern: `^x${i}[a-z]{0,60}$` };
    expect(schemaCostProblem({ properties: many })).to.equal(
      'patterns compile to more than 4000 instructions together',
    );
    expect(schemaCostProblem({ properties: Object.fromEntries(Object.entries(many).slice(0, 20)) })).to.equal(
      undefined,
    );
  });

  it('bounds the patterns of one announcement and the length of one pattern, before compiling them', () => {
    const announcement = (contracts: number, perSchema: number) => ({
      service: 'svc',
      instanceId: 'svc-1',
      ttlMs: 10_000,
      contracts: Array.from({ length: contracts }, (_, c) => ({
        messageType: `Do${c}Command`,
        targetService: 'svc',
        inputSchema: {
          type: 'object',
          properties: Object.fromEntries(
            Array.from({ length: perSchema }, (_, i) => [`p${i}`, { type: 'string', pattern: `^c${c}p${i}$` }]),
          ),
        },
        outputSchema: { type: 'object' },
        requiredPermissions: [],
      })),
    });
    const tooMany = validateAnnouncement(announcement(200, 40));
    expect(tooMany.ok ? '' : tooMany.reason).to.equal(
      'contracts[6] inputSchema has more than 256 patterns in one announcement',
    );
    expect(validateAnnouncement(announcement(128, 2)).ok).to.equal(true);
    expect(schemaCostProblem({ pattern: `^${'a'.repeat(1000)}$` })).to.equal(
      'has a pattern of 1002 characters, over 1000',
    );
  });

  it('bounds keys × patternProperties: more than two patterns need maxProperties', () => {
    const pp = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`^x${i}-`, { type: 'integer' }]));
    expect(schemaCostProblem({ type: 'object', patternProperties: pp(2) })).to.equal(undefined);
    expect(schemaCostProblem({ type: 'object', patternProperties: pp(8) })).to.equal(
      'has 8 patternProperties without maxProperties <= 2500 (every key is tested against every pattern)',
    );
    expect(schemaCostProblem({ type: 'object', patternProperties: pp(8), maxProperties: 2501 })).to.match(
      /^has 8 patternProperties/,
    );
    expect(schemaCostProblem({ type: 'object', patternProperties: pp(8), maxProperties: 2500 })).to.equal(undefined);
  });

  it(`bounds uniqueItems on non-scalar items to maxItems <= ${MAX_UNIQUE_ITEMS}`, () => {
    const quadratic = /uniqueItems on an array of non-scalar items without maxItems <= 500/;
    expect(schemaCostProblem({ type: 'array', uniqueItems: true })).to.match(quadratic);
    expect(
      schemaCostProblem({ properties: { a: { uniqueItems: true, items: { type: 'object' }, maxItems: 501 } } }),
    ).to.match(quadratic);
    expect(schemaCostProblem({ uniqueItems: true, items: { type: ['string', 'array'] } })).to.match(quadratic);
    expect(schemaCostProblem({ uniqueItems: true, items: { type: 'object' }, maxItems: 500 })).to.equal(undefined);
    expect(schemaCostProblem({ uniqueItems: true, items: { type: ['string', 'integer'] } })).to.equal(undefined);
    expect(schemaCostProblem({ uniqueItems: false })).to.equal(undefined);
  });

  it('the registry refuses such a contract with the reason', () => {
    const announcement = (inputSchema: object) => ({
      service: 'svc',
      instanceId: 'svc-1',
      ttlMs: 10_000,
      contracts: [
        {
          messageType: 'DoCommand',
          targetService: 'svc',
          inputSchema,
          outputSchema: { type: 'object' },
          requiredPermissions: [],
        },
      ],
    });
    const refused = validateAnnouncement(
      announcement({ type: 'object', properties: { s: { type: 'string', pattern: '(?<=a)b' } } }),
    );
    expect(refused.ok).to.equal(false);
    expect(refused.ok ? '' : refused.reason).to.match(
      /inputSchema pattern "\(\?<=a\)b" cannot run on the linear-time engine/,
    );
    const quadratic = validateAnnouncement(
      announcement({ type: 'object', properties: { list: { type: 'array', uniqueItems: true } } }),
    );
    expect(quadratic.ok ? '' : quadratic.reason).to.match(/inputSchema has uniqueItems/);
    expect(
      validateAnnouncement(announcement({ type: 'object', properties: { s: { type: 'string', pattern: EVIL } } })).ok,
    ).to.equal(true);
  });
  it(`bounds repetitions × oneOf/anyOf branches past ${FREE_BRANCHES} branches to ${MAX_BRANCH_TESTS}`, () => {
    const branches = (n: number) => Array.from({ length: n }, (_, i) => ({ const: `v${i}` }));
    const tried = /^has a (oneOf|anyOf) of \d+ branches where values repeat/;
    // Once per request, at the root or under plain properties: any number of branches.
    expect(schemaCostProblem({ oneOf: branches(1300) })).to.equal(undefined);
    expect(schemaCostProblem({ properties: { a: { anyOf: branches(1300) } } })).to.equal(undefined);
    // Under unbounded items or members: up to FREE_BRANCHES only.
    expect(schemaCostProblem({ type: 'array', items: { oneOf: branches(FREE_BRANCHES) } })).to.equal(undefined);
    expect(schemaCostProblem({ type: 'array', items: { oneOf: branches(FREE_BRANCHES + 1) } })).to.match(tried);
    expect(schemaCostProblem({ type: 'object', additionalProperties: { anyOf: branches(20) } })).to.match(tried);
    expect(schemaCostProblem({ properties: { a: { patternProperties: { '^x': { oneOf: branches(20) } } } } })).to.match(
      tried,
    );
    // Bounded repetitions: maxItems × branches at most MAX_BRANCH_TESTS, nested arrays multiplied.
    expect(schemaCostProblem({ type: 'array', maxItems: 1000, items: { oneOf: branches(20) } })).to.equal(undefined);
    expect(schemaCostProblem({ type: 'array', maxItems: 1001, items: { oneOf: branches(20) } })).to.match(tried);
    expect(schemaCostProblem({ maxItems: 100, items: { maxItems: 100, items: { anyOf: branches(3) } } })).to.equal(
      undefined,
    );
    expect(schemaCostProblem({ maxItems: 100, items: { maxItems: 100, items: { anyOf: branches(9) } } })).to.match(
      tried,
    );
    // A definition may be used anywhere through $ref; a property named like a keyword is only a name.
    expect(schemaCostProblem({ $defs: { u: { oneOf: branches(9) } }, items: { $ref: '#/$defs/u' } })).to.match(tried);
    expect(
      schemaCostProblem({ properties: { items: { type: 'array', maxItems: 10, items: { oneOf: branches(9) } } } }),
    ).to.equal(undefined);
  });
});
