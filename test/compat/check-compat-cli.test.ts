import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, run } from '../packaging/support';
import type { Contract } from '../../plugin/contracts/types';

/** The compiled bin, as `npx contracts-gateway` runs it (package.json `bin`). */
const CLI = join(ROOT, 'dist', 'plugin', 'cli', 'contracts-gateway.js');

function userContract(extra: Partial<Contract> = {}): Contract {
  return {
    messageType: 'GetUserQuery',
    targetService: 'users',
    inputSchema: { type: 'object', properties: { userId: { type: 'string' } }, required: ['userId'] },
    outputSchema: {
      type: 'object',
      properties: { name: { type: 'string' }, email: { type: 'string' } },
      required: ['name', 'email'],
    },
    requiredPermissions: ['users:read'],
    ...extra,
  };
}

describe('contracts-gateway check-compat (the compiled CLI)', function () {
  this.timeout(20_000);
  let dir: string;
  const file = (name: string, content: unknown): string => {
    const path = join(dir, name);
    writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
    return path;
  };
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'check-compat-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('prints each change with its class and exits 1 on a breaking one', async () => {
    const old = file('old.json', [userContract()]);
    const next = file('new.json', [
      userContract({ requiredPermissions: ['users:read', 'users:pii'] }),
      userContract({ messageType: 'ListUsersQuery' }),
    ]);
    const r = await run(process.execPath, [CLI, 'check-compat', next, '--against', old]);
    expect(r.code).to.equal(1);
    expect(r.output.split('\n')).to.deep.equal([
      'breaking   GetUserQuery: permission users:pii required now: callers without it get 403 [permission-added]',
      'compatible ListUsersQuery: contract ListUsersQuery added [contract-added]',
      '1 breaking, 1 compatible',
      '',
    ]);
  });

  it('exits 0 when every change is compatible, and says so when there is none', async () => {
    const old = file('old.json', [userContract()]);
    const widened = userContract({
      inputSchema: {
        type: 'object',
        properties: { userId: { type: 'string' }, verbose: { type: 'boolean' } },
        required: ['userId'],
      },
    });
    const r = await run(process.execPath, [CLI, 'check-compat', file('new.json', [widened]), '--against', old]);
    expect(r).to.deep.equal({
      code: 0,
      output: 'compatible GetUserQuery: input.verbose added [input-property-added]\n0 breaking, 1 compatible\n',
    });
    expect(await run(process.execPath, [CLI, 'check-compat', old, '--against', old])).to.deep.equal({
      code: 0,
      output: 'no changes\n',
    });
  });

  it('--json prints the changes as data', async () => {
    const r = await run(process.execPath, [
      CLI,
      'check-compat',
      file('new.json', []),
      '--against',
      file('old.json', [userContract()]),
      '--json',
    ]);
    expect(r.code).to.equal(1);
    expect(JSON.parse(r.output)).to.deep.equal({
      changes: [
        {
          messageType: 'GetUserQuery',
          class: 'breaking',
          rule: 'contract-removed',
          at: 'GetUserQuery',
          message: 'contract GetUserQuery removed with its routes',
        },
      ],
    });
  });

  it('answers bad input with one line and exit 2: a missing file, not JSON, not contracts, an unreachable gateway', async () => {
    const good = file('good.json', [userContract()]);
    const cases: Array<[string, RegExp]> = [
      [join(dir, 'missing.json'), /^contracts-gateway: cannot read .*missing\.json \(ENOENT\)\n$/],
      [file('text.json', 'not json {'), /^contracts-gateway: .*text\.json is not JSON\n$/],
      [
        file('object.json', { contracts: [] }),
        /^contracts-gateway: .*object\.json is not a JSON array of contracts\n$/,
      ],
      [
        file('invalid.json', [{ ...userContract(), sunset: 'soon' }]),
        /^contracts-gateway: .*invalid\.json: contracts\[0\] sunset must be an ISO 8601 date/,
      ],
    ];
    for (const [path, expected] of cases) {
      const r = await run(process.execPath, [CLI, 'check-compat', path, '--against', good]);
      expect(r.code, path).to.equal(2);
      expect(r.output, path).to.match(expected);
      expect(r.output.trim().split('\n'), path).to.have.length(1);
    }
    // A gateway that cannot be reached (fetch will not even try port 1).
    const r = await run(process.execPath, [CLI, 'check-compat', good, '--against', 'http://127.0.0.1:1/']);
    expect(r.code).to.equal(2);
    expect(r.output).to.match(
      /^contracts-gateway: cannot reach http:\/\/127\.0\.0\.1:1\/api\/discovery\/contracts \([^)]+\)\n$/,
    );
  });

  it('answers a wrong command line with its usage and exit 64', async () => {
    const good = file('good.json', [userContract()]);
    for (const args of [
      ['check-compat', good],
      ['check-compat', '--against', good],
      ['check-compat', good, good, '--against', good],
      ['check-compat', good, '--against', good, '--bogus'],
      ['frobnicate'],
      [],
    ]) {
      const r = await run(process.execPath, [CLI, ...args]);
      expect(r.code, args.join(' ')).to.equal(64);
      expect(r.output, args.join(' ')).to.include(
        'check-compat <new contracts file> --against <gateway URL | contracts file>',
      );
    }
  });
});
