import { expect } from 'chai';
import type { Contract, JsonSchema } from '../../plugin/contracts/types';
import { compileSchema, dialectOf, type SchemaRole } from '../../plugin/validation/ajv';
import { ValidatorCache, compileInline } from '../../plugin/validation/validator-cache';
import { ContractRegistry } from '../../plugin/contracts/registry';

function contract(
  messageType: string,
  inputSchema: JsonSchema,
  outputSchema: JsonSchema = { type: 'object' },
): Contract {
  return { messageType, targetService: 'svc', inputSchema, outputSchema, requiredPermissions: [] };
}

/** A compiler that counts what it compiles. */
function countingCompiler() {
  const calls: Array<{ role: SchemaRole; schema: JsonSchema }> = [];
  const compile = (schema: JsonSchema, role: SchemaRole) => {
    calls.push({ role, schema });
    return compileSchema(schema, role);
  };
  return { calls, compile };
}

describe('validation: compile cache', () => {
  const a = contract('CreateThingCommand', {
    type: 'object',
    properties: { name: { type: 'string' } },
    required: ['name'],
  });

  it('compiles each contract schema once, however often it is asked for', () => {
    const { calls, compile } = countingCompiler();
    const cache = new ValidatorCache({ compile });
    cache.sync([a]);
    expect(calls.map((c) => c.role)).to.deep.equal(['input', 'output']);
    for (let i = 0; i < 50; i++) {
      // Fresh copies each time, as the registry hands them out: content decides, not identity.
      const v = cache.validator(structuredClone(a), 'input');
      expect(v.ok && v.validate({ name: 'x' })).to.equal(true);
    }
    cache.sync([structuredClone(a)]);
    expect(calls).to.have.length(2);
  });

  it('recompiles a contract whose schema changed and forgets contracts that are gone', () => {
    const { calls, compile } = countingCompiler();
    const cache = new ValidatorCache({ compile });
    cache.sync([a]);
    const changed = contract(a.messageType, { type: 'object', properties: { name: { type: 'integer' } } });
    cache.sync([changed]);
    expect(calls.filter((c) => c.role === 'input')).to.have.length(2);
    const v = cache.validator(changed, 'input');
    expect(v.ok && v.validate({ name: 1 })).to.equal(true);
    expect(cache.size).to.equal(2);
    cache.sync([]);
    expect(cache.size).to.equal(0);
  });

  it('turns a schema that does not compile into a failure that is logged once, never thrown', () => {
    const logged: string[] = [];
    const cache = new ValidatorCache({ log: { error: (m) => logged.push(m) } });
    const bad = contract('CreateBadCommand', { type: 'object', properties: { x: { type: 'strnig' } } });
    cache.sync([bad]);
    const v = cache.validator(bad, 'input');
    expect(v.ok).to.equal(false);
    expect(logged).to.have.length(1);
    expect(logged[0]).to.contain('CreateBadCommand').and.contain('inputSchema does not compile');
    cache.validator(bad, 'input');
    expect(logged).to.have.length(1);
  });

  it('compiles on the registry’s change event, so a bad schema is reported at discovery', () => {
    const logged: string[] = [];
    const { calls, compile } = countingCompiler();
    const cache = new ValidatorCache({ compile, log: { error: (m) => logged.push(m) } });
    const registry = new ContractRegistry();
    registry.on('change', (contracts) => cache.sync(contracts));
    registry.apply({
      service: 'svc',
      instanceId: 'i1',
      ttlMs: 10000,
      contracts: [a, contract('CreateBadCommand', { $ref: '#/nowhere' })],
    });
    expect(logged.join('\n')).to.contain('CreateBadCommand');
    const compiledBefore = calls.length;
    // A plain re-announcement changes nothing: no event, no compile.
    registry.apply({
      service: 'svc',
      instanceId: 'i1',
      ttlMs: 10000,
      contracts: [a, contract('CreateBadCommand', { $ref: '#/nowhere' })],
    });
    expect(calls.length).to.equal(compiledBefore);
  });

  it('picks the dialect from $schema: 2020-12 keywords apply only when the schema says 2020-12', () => {
    const schema = { type: 'object', dependentRequired: { order: ['sort'] } };
    expect(dialectOf(schema)).to.equal('draft-07');
    expect(compileSchema(schema, 'input')({ order: 'asc' })).to.equal(true);
    const s2020 = { $schema: 'https://json-schema.org/draft/2020-12/schema', ...schema };
    expect(dialectOf(s2020)).to.equal('2020-12');
    expect(compileSchema(s2020, 'input')({ order: 'asc' })).to.equal(false);
    expect(() => compileSchema({ $schema: 'http://json-schema.org/draft-04/schema#' }, 'input')).to.throw(
      /unsupported/,
    );
  });

  it('checks a date on input against the calendar, on output by its shape only (the check runs on every response)', () => {
    const schema = {
      type: 'object',
      properties: { at: { type: 'string', format: 'date-time' }, on: { type: 'string', format: 'date' } },
    };
    const input = compileSchema(schema, 'input');
    const output = compileSchema(schema, 'output');
    for (const validate of [input, output]) {
      expect(validate({ at: '2024-02-29T10:00:00Z', on: '2024-02-29' })).to.equal(true);
      expect(validate({ at: 'yesterday' })).to.equal(false);
      expect(validate({ on: '29/02/2024' })).to.equal(false);
    }
    expect(input({ at: '2023-02-30T10:00:00Z' }), 'no February 30th on input').to.equal(false);
    expect(input({ on: '2023-02-29' })).to.equal(false);
    expect(output({ at: '2023-02-30T10:00:00Z' }), 'shape only on output').to.equal(true);
  });

  it('checks formats, fills input defaults, never coerces or drops fields', () => {
    const validate = compileSchema(
      {
        type: 'object',
        properties: {
          at: { type: 'string', format: 'date-time' },
          id: { type: 'string', format: 'uuid' },
          n: { type: 'integer' },
          page: { type: 'integer', default: 1 },
        },
        additionalProperties: false,
      },
      'input',
    );
    expect(validate({ at: 'yesterday' })).to.equal(false);
    expect(validate({ id: 'not-a-uuid' })).to.equal(false);
    expect(validate({ n: '12' })).to.equal(false);
    const extra = { extra: 1 };
    expect(validate(extra)).to.equal(false);
    expect(extra).to.have.property('extra', 1);
    const defaulted: Record<string, unknown> = { at: '2025-01-01T00:00:00Z' };
    expect(validate(defaulted)).to.equal(true);
    expect(defaulted.page).to.equal(1);
    const output = compileSchema({ type: 'object', properties: { page: { type: 'integer', default: 1 } } }, 'output');
    const result = {};
    output(result);
    expect(result).to.deep.equal({});
  });

  it('keeps inline schemas by content across reloads', () => {
    const { calls, compile } = countingCompiler();
    const schema = {
      type: 'object',
      properties: { q: { type: 'string' } },
      required: ['q'],
      title: `inline-${Date.now()}`,
    };
    const first = compileInline(schema, compile);
    const again = compileInline(structuredClone(schema), compile);
    expect(again).to.equal(first);
    expect(calls).to.have.length(1);
  });
});

describe('validation: $async schemas', () => {
  // ajv compiles `$async: true` into a function returning a promise: truthy for every value, and its rejection on an
  // invalid one went unhandled and stopped the gateway (a service's announcement alone did it, through the OpenAPI
  // examples check). Such a schema does not compile: its routes answer 500, like any other broken schema.
  const variants: Record<string, JsonSchema> = {
    'at the root': { $async: true, type: 'object', properties: { a: { type: 'string' } } },
    'at the root, 2020-12': { $schema: 'https://json-schema.org/draft/2020-12/schema', $async: true, type: 'object' },
    'below the root': { type: 'object', properties: { a: { $async: true, type: 'string' } } },
    'behind a $ref': {
      type: 'object',
      properties: { a: { $ref: '#/definitions/x' } },
      definitions: { x: { $async: true, type: 'string' } },
    },
  };
  for (const [where, schema] of Object.entries(variants)) {
    it(`refuses $async ${where}, for both roles`, () => {
      for (const role of ['input', 'output'] as const) {
        expect(() => compileSchema(schema, role), role).to.throw(/async/);
        const compiled = new ValidatorCache().validator(contract('CreateThingCommand', schema, schema), role);
        expect(compiled.ok, role).to.equal(false);
      }
    });
  }
});

describe('validation: errors of large values', () => {
  const schema: JsonSchema = {
    type: 'object',
    properties: { a: { type: 'array', items: { type: 'string', minLength: 2 } } },
  };

  it('lists every error of a small value, and only the first of a large one', () => {
    for (const role of ['input', 'output'] as const) {
      const validate = compileSchema(schema, role);
      expect(validate({ a: [0, 'x', 'ok', 1] }), role).to.equal(false);
      expect(
        validate.errors?.map((e) => e.instancePath),
        role,
      ).to.deep.equal(['/a/0', '/a/1', '/a/3']);
      // allErrors here made one error object per item: 400,000 of them for this 800 KB body.
      expect(validate({ a: Array.from({ length: 400_000 }, () => 0) }), role).to.equal(false);
      expect(
        validate.errors?.map((e) => e.instancePath),
        role,
      ).to.deep.equal(['/a/0']);
      expect(validate({ a: Array.from({ length: 400_000 }, () => 'ok') }), role).to.equal(true);
      expect(validate.errors, role).to.equal(null);
    }
  });

  it('fills input defaults on a value that passes', () => {
    const validate = compileSchema({ type: 'object', properties: { n: { type: 'integer', default: 3 } } }, 'input');
    const value: Record<string, unknown> = {};
    expect(validate(value)).to.equal(true);
    expect(value).to.deep.equal({ n: 3 });
  });
});

describe('validation: uniqueItems', () => {
  it('compares items as JSON values, in time linear in the value (ajv compared every pair)', () => {
    for (const role of ['input', 'output'] as const) {
      const validate = compileSchema({ type: 'object', properties: { a: { type: 'array', uniqueItems: true } } }, role);
      expect(validate({ a: [1, '1', [1], { x: 1 }, null, {}] }), role).to.equal(true);
      expect(
        validate({
          a: [
            { x: 1, y: [2] },
            { y: [2], x: 1 },
          ],
        }),
        role,
      ).to.equal(false);
      expect(
        validate.errors?.map((e) => [e.instancePath, e.keyword]),
        role,
      ).to.deep.equal([['/a', 'uniqueItems']]);
      expect(validate({ a: [1, 1.0] }), role).to.equal(false);
      // 20,000 of these held the event loop for 8 s before; 120,000 (about 1 MB) now take well under one.
      const started = performance.now();
      expect(validate({ a: Array.from({ length: 120_000 }, (_, i) => [i]) }), role).to.equal(true);
      expect(performance.now() - started, role).to.be.below(1500);
    }
  });
});

describe('validation: large enums', () => {
  it('checks a value against a large enum by lookup, with the same answers and errors', () => {
    for (const role of ['input', 'output'] as const) {
      const members = Array.from({ length: 3900 }, (_, i) => `v${i}`);
      const validate = compileSchema(
        { type: 'object', properties: { a: { type: 'array', items: { enum: members } } } },
        role,
      );
      expect(validate({ a: ['v0', 'v3899'] }), role).to.equal(true);
      expect(validate({ a: ['v0', 'w'] }), role).to.equal(false);
      expect(
        validate.errors?.map((e) => [
          e.instancePath,
          e.keyword,
          (e.params as { allowedValues: unknown[] }).allowedValues.length,
        ]),
        role,
      ).to.deep.equal([['/a/1', 'enum', 3900]]);
      const objects = compileSchema({ enum: [...Array.from({ length: 20 }, (_, i) => ({ k: i, n: [i] })), 1] }, role);
      expect([objects({ n: [19], k: 19 }), objects(1.0), objects('1'), objects({ k: 19 })], role).to.deep.equal([
        true,
        true,
        false,
        false,
      ]);
      // 130,000 items against the last of 3,900 members took 7 s (one comparison per member); now a lookup each.
      const started = performance.now();
      expect(validate({ a: Array.from({ length: 130_000 }, () => 'v3899') }), role).to.equal(true);
      expect(performance.now() - started, role).to.be.below(1500);
    }
  });
});
