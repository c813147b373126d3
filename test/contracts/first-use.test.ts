import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ContractRegistry } from '../../plugin/contracts/registry';
import { FIRST_USE_FILE, FirstUsePins, MAX_FIRST_USE_PINS, readPins } from '../../plugin/contracts/first-use';
import { firstUseOf } from '../../plugin/settings/bus-trust';
import { InvalidSettingError } from '../../plugin/settings/invalid-setting';
import type { Contract } from '../../plugin/contracts/types';

function contract(messageType: string, targetService: string): Contract {
  return { messageType, targetService, inputSchema: { type: 'object' }, outputSchema: {}, requiredPermissions: [] };
}

function announce(service: string, instanceId: string, types: string[], withdrawn = false) {
  return withdrawn
    ? { service, instanceId, withdrawn: true }
    : { service, instanceId, ttlMs: 10_000, contracts: types.map((t) => contract(t, service)) };
}

describe('trust on first use (no services file)', () => {
  let dir: string;
  let pins: FirstUsePins | undefined;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'first-use-'));
  });
  afterEach(() => {
    pins?.close();
    pins = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  function registryWith(file: string | undefined, warnings: string[] = []): ContractRegistry {
    pins?.close();
    pins = new FirstUsePins(file, { warn: (m) => warnings.push(m) });
    return new ContractRegistry({ firstUse: pins, logger: { warn: (m) => warnings.push(m) } });
  }

  it('keeps a message type for its first holder while it restarts: a rogue is refused, logged and listed', () => {
    const warnings: string[] = [];
    const registry = registryWith(join(dir, FIRST_USE_FILE), warnings);
    registry.apply(announce('auth-service', 'a1', ['AuthenticateCommand']));
    expect(registry.get('AuthenticateCommand')?.targetService).to.equal('auth-service');
    // auth-service restarts: its instance withdraws, a rogue announces the type meanwhile.
    registry.apply(announce('auth-service', 'a1', [], true));
    registry.apply(announce('rogue-service', 'r1', ['AuthenticateCommand', 'RogueQuery']));
    expect(registry.get('AuthenticateCommand')).to.equal(undefined);
    expect(registry.get('RogueQuery')?.targetService).to.equal('rogue-service');
    expect(registry.refusals()).to.deep.equal([
      {
        service: 'rogue-service',
        messageType: 'AuthenticateCommand',
        reason: 'message type is pinned to auth-service by first use',
        holder: 'auth-service',
      },
    ]);
    expect(warnings.filter((w) => w.includes('refused AuthenticateCommand from rogue-service'))).to.have.length(1);
    // The restarted auth-service is served at once, the rogue still announcing.
    registry.apply(announce('auth-service', 'a2', ['AuthenticateCommand']));
    expect(registry.get('AuthenticateCommand')?.targetService).to.equal('auth-service');
    expect(registry.conflicts()).to.deep.equal([
      { messageType: 'AuthenticateCommand', services: ['auth-service', 'rogue-service'] },
    ]);
  });

  it('keeps the pins in the data folder (made when missing), so a restarted gateway refuses the rogue too', () => {
    const file = join(dir, 'data', FIRST_USE_FILE);
    registryWith(file).apply(announce('auth-service', 'a1', ['AuthenticateCommand']));
    expect(readPins(file).get('AuthenticateCommand')).to.deep.equal({ service: 'auth-service' });
    const restarted = registryWith(file);
    restarted.apply(announce('rogue-service', 'r1', ['AuthenticateCommand']));
    expect(restarted.get('AuthenticateCommand')).to.equal(undefined);
    expect(restarted.refusals().map((r) => r.reason)).to.deep.equal([
      'message type is pinned to auth-service by first use',
    ]);
  });

  it('binds the broker user when broker users are required', () => {
    const file = join(dir, FIRST_USE_FILE);
    const registry = registryWith(file);
    registry.apply(announce('auth-service', 'a1', ['AuthenticateCommand']), { userId: 'svc-auth' });
    expect(readPins(file).get('AuthenticateCommand')).to.deep.equal({ service: 'auth-service', user: 'svc-auth' });
    registry.apply(announce('auth-service', 'a1', [], true), { userId: 'svc-auth' });
    registry.apply(announce('auth-service', 'a2', ['AuthenticateCommand']), { userId: 'other-user' });
    expect(registry.get('AuthenticateCommand')).to.equal(undefined);
    expect(registry.refusals()[0]?.reason).to.equal(
      'message type is pinned to auth-service as broker user svc-auth by first use',
    );
  });

  it('without a data folder, pins last as long as the process', () => {
    const registry = registryWith(undefined);
    registry.apply(announce('auth-service', 'a1', ['AuthenticateCommand']));
    registry.apply(announce('auth-service', 'a1', [], true));
    registry.apply(announce('rogue-service', 'r1', ['AuthenticateCommand']));
    expect(registry.get('AuthenticateCommand')).to.equal(undefined);
  });

  it('stops pinning at the cap: later message types are first-come', () => {
    const file = join(dir, FIRST_USE_FILE);
    const many = Object.fromEntries(
      Array.from({ length: MAX_FIRST_USE_PINS }, (_, i) => [`Type${i}Query`, { service: 'old-service' }]),
    );
    writeFileSync(file, JSON.stringify({ version: 1, pins: many }));
    const warnings: string[] = [];
    const registry = registryWith(file, warnings);
    registry.apply(announce('new-service', 'n1', ['NewQuery']));
    expect(registry.get('NewQuery')?.targetService).to.equal('new-service');
    expect(readPins(file).has('NewQuery')).to.equal(false);
    expect(warnings.some((w) => w.includes(`${MAX_FIRST_USE_PINS} message types are pinned`))).to.equal(true);
  });

  it('stops the start on a broken pins file, naming the setting and the file, never its contents', () => {
    writeFileSync(join(dir, FIRST_USE_FILE), '{"version":1,"pins":{"X":{"service":7}}} secret');
    expect(() => firstUseOf({ dataDir: dir }, {}))
      .to.throw(InvalidSettingError)
      .with.property('message')
      .that.matches(/^dataDir .*first-use-pins\.json: not JSON$/);
    writeFileSync(join(dir, FIRST_USE_FILE), '{"version":1,"pins":{"X":{"service":7}}}');
    expect(() => firstUseOf({}, { DATA_DIR: dir })).to.throw(/^DATA_DIR .*: the pin of X is not \{service, user\?\}$/);
    expect(firstUseOf({ firstUsePins: false, dataDir: dir }, {})).to.equal(undefined);
    expect(firstUseOf({}, { FIRST_USE_PINS: 'false', DATA_DIR: dir })).to.equal(undefined);
    expect(firstUseOf({}, {})).to.deep.equal({ file: undefined });
    expect(firstUseOf({}, { EG_CONFIG_DIR: dir })).to.deep.equal({ file: join(dir, 'data', FIRST_USE_FILE) });
  });

  it('writes the file sorted, one pin per message type', () => {
    const file = join(dir, FIRST_USE_FILE);
    registryWith(file).apply(announce('users-service', 'u1', ['ListUsersQuery', 'CreateUserCommand']));
    expect(JSON.parse(readFileSync(file, 'utf8'))).to.deep.equal({
      version: 1,
      pins: { CreateUserCommand: { service: 'users-service' }, ListUsersQuery: { service: 'users-service' } },
    });
  });
});
