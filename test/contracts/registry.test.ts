import { expect } from 'chai';
import { ContractRegistry } from '../../plugin/contracts/registry';
import { validateAnnouncement } from '../../plugin/contracts/announcement-validation';
import type { Announcement, Contract } from '../../plugin/contracts/types';

function contract(messageType: string, targetService = 'users', extra: Partial<Contract> = {}): Contract {
  return {
    messageType,
    targetService,
    inputSchema: { type: 'object' },
    outputSchema: {},
    requiredPermissions: ['users:read'],
    ...extra,
  };
}

function announce(service: string, instanceId: string, contracts: Contract[], ttlMs = 10_000): Announcement {
  return { service, instanceId, contracts, ttlMs };
}

/** A registry on a hand-driven clock, recording its change events. */
function setup() {
  let now = 1_000;
  const warnings: string[] = [];
  const registry = new ContractRegistry({ now: () => now, logger: { warn: (m) => warnings.push(m) } });
  const changes: string[][] = [];
  registry.on('change', (contracts) => changes.push(contracts.map((c) => c.messageType)));
  return { registry, changes, warnings, tick: (ms: number) => (now += ms), now: () => now };
}

describe('ContractRegistry', () => {
  it('tracks an instance with its lease', () => {
    const { registry, changes } = setup();
    const result = registry.apply(
      announce('users', 'u1', [contract('ListUsersQuery'), contract('CreateUserCommand')], 5_000),
    );
    expect(result).to.deep.equal({ accepted: true, changed: true });
    expect(registry.instances()).to.deep.equal([
      {
        service: 'users',
        instanceId: 'u1',
        lastSeen: 1_000,
        leaseExpiresAt: 6_000,
        messageTypes: ['CreateUserCommand', 'ListUsersQuery'],
      },
    ]);
    expect(registry.contracts().map((c) => c.messageType)).to.deep.equal(['CreateUserCommand', 'ListUsersQuery']);
    expect(registry.get('ListUsersQuery')).to.deep.equal(contract('ListUsersQuery'));
    expect(registry.get('Nope')).to.equal(undefined);
    expect(changes).to.deep.equal([['CreateUserCommand', 'ListUsersQuery']]);
  });

  it('expires an instance whose lease ran out, and renews on re-announcement', () => {
    const { registry, changes, tick } = setup();
    registry.apply(announce('users', 'u1', [contract('ListUsersQuery')], 5_000));
    tick(4_000);
    registry.apply(announce('users', 'u1', [contract('ListUsersQuery')], 5_000)); // lease now ends at 10 000
    tick(4_000);
    expect(registry.expire()).to.deep.equal([]);
    tick(1_000);
    const dropped = registry.expire();
    expect(dropped.map((i) => i.instanceId)).to.deep.equal(['u1']);
    expect(registry.contracts()).to.deep.equal([]);
    expect(registry.instances()).to.deep.equal([]);
    expect(changes).to.deep.equal([['ListUsersQuery'], []]);
  });

  it('keeps a service alive while any of its instances holds a lease', () => {
    const { registry, changes, tick } = setup();
    registry.apply(announce('users', 'u1', [contract('ListUsersQuery')], 5_000));
    tick(3_000);
    registry.apply(announce('users', 'u2', [contract('ListUsersQuery')], 5_000));
    tick(2_500);
    expect(registry.expire().map((i) => i.instanceId)).to.deep.equal(['u1']);
    expect(registry.contracts().map((c) => c.messageType)).to.deep.equal(['ListUsersQuery']);
    expect(changes).to.have.length(1);
  });

  it('removes an instance on withdrawal', () => {
    const { registry, changes } = setup();
    registry.apply(announce('users', 'u1', [contract('ListUsersQuery')]));
    const result = registry.apply({ service: 'users', instanceId: 'u1', contracts: [], ttlMs: 0, withdrawn: true });
    expect(result).to.deep.equal({ accepted: true, changed: true });
    expect(registry.instances()).to.deep.equal([]);
    expect(changes).to.deep.equal([['ListUsersQuery'], []]);
    expect(registry.apply({ service: 'users', instanceId: 'ghost', withdrawn: true })).to.deep.equal({
      accepted: true,
      changed: false,
    });
  });

  it('does not emit on re-announcements of the same contracts, even with keys in another order', () => {
    const { registry, changes, tick } = setup();
    const c = contract('ListUsersQuery', 'users', {
      inputSchema: { type: 'object', properties: { page: { type: 'number' } } },
    });
    registry.apply(announce('users', 'u1', [c]));
    for (let i = 0; i < 5; i += 1) {
      tick(2_000);
      const reordered = { ...c, inputSchema: { properties: { page: { type: 'number' } }, type: 'object' } };
      expect(registry.apply(announce('users', 'u1', [reordered])).changed).to.equal(false);
    }
    registry.apply(announce('users', 'u2', [c])); // a second instance with the same contracts
    expect(changes).to.have.length(1);
  });

  it('emits when the content of a contract changes', () => {
    const { registry, changes } = setup();
    registry.apply(announce('users', 'u1', [contract('ListUsersQuery')]));
    registry.apply(
      announce('users', 'u1', [contract('ListUsersQuery', 'users', { requiredPermissions: ['users:list'] })]),
    );
    expect(changes).to.have.length(2);
    expect(registry.get('ListUsersQuery')?.requiredPermissions).to.deep.equal(['users:list']);
  });

  it('lets the instance with the newest contracts win within a service, without flip-flopping', () => {
    const { registry, changes, tick } = setup();
    const v1 = contract('CreateUserCommand', 'users', { requiredPermissions: ['v1'] });
    const v2 = contract('CreateUserCommand', 'users', { requiredPermissions: ['v2'] });
    registry.apply(announce('users', 'old', [v1]));
    tick(1_000);
    registry.apply(announce('users', 'new', [v2]));
    expect(registry.get('CreateUserCommand')?.requiredPermissions).to.deep.equal(['v2']);
    // The old instance keeps re-announcing its unchanged contracts: the newer version stays.
    tick(1_000);
    registry.apply(announce('users', 'old', [v1]));
    expect(registry.get('CreateUserCommand')?.requiredPermissions).to.deep.equal(['v2']);
    expect(changes).to.have.length(2);
  });

  it('keeps a message type with the service that announced it first, whatever the names, and reports the clash once', () => {
    const { registry, warnings } = setup();
    const conflicts: unknown[] = [];
    registry.on('conflict', (c) => conflicts.push(c));
    registry.apply(announce('zeta', 'z1', [contract('PingCommand', 'zeta')]));
    registry.apply(announce('alpha', 'a1', [contract('PingCommand', 'alpha')]));
    expect(registry.get('PingCommand')?.targetService).to.equal('zeta');
    expect(registry.conflicts()).to.deep.equal([{ messageType: 'PingCommand', services: ['zeta', 'alpha'] }]);
    expect(registry.refusals()).to.deep.equal([
      { service: 'alpha', messageType: 'PingCommand', reason: 'message type is held by zeta', holder: 'zeta' },
    ]);
    expect(conflicts).to.deep.equal([[{ messageType: 'PingCommand', services: ['zeta', 'alpha'] }]]);
    expect(warnings.filter((w) => w.includes('refused PingCommand from alpha'))).to.have.length(1);
    registry.apply(announce('alpha', 'a1', [contract('PingCommand', 'alpha')])); // unchanged: no second report
    registry.apply(announce('alpha', 'a2', [contract('PingCommand', 'alpha')])); // nor with a new instance
    expect(conflicts).to.have.length(1);
    expect(warnings.filter((w) => w.includes('refused PingCommand from alpha'))).to.have.length(1);
    registry.apply({ service: 'zeta', instanceId: 'z1', withdrawn: true });
    expect(registry.get('PingCommand')?.targetService).to.equal('alpha');
    expect(registry.conflicts()).to.deep.equal([]);
    expect(registry.refusals()).to.deep.equal([]);
  });

  describe('malformed announcements', () => {
    const valid = announce('users', 'u1', [contract('ListUsersQuery')]);
    const cases: Array<[string, unknown]> = [
      ['not an object', 'hello'],
      ['null', null],
      ['an array', [valid]],
      ['no service', { ...valid, service: undefined }],
      ['an empty instanceId', { ...valid, instanceId: '' }],
      ['contracts not an array', { ...valid, contracts: { ListUsersQuery: {} } }],
      ['a contract without messageType', { ...valid, contracts: [{ ...contract('X'), messageType: undefined }] }],
      ['a contract without targetService', { ...valid, contracts: [{ ...contract('X'), targetService: '' }] }],
      [
        'a contract without requiredPermissions',
        { ...valid, contracts: [{ ...contract('X'), requiredPermissions: undefined }] },
      ],
      ['a contract whose schema is not an object', { ...valid, contracts: [{ ...contract('X'), inputSchema: 'any' }] }],
      ['a message type unsafe for paths', { ...valid, contracts: [contract('../../etc')] }],
      ['a repeated message type', { ...valid, contracts: [contract('X'), contract('X')] }],
      [
        'a bad http override',
        { ...valid, contracts: [contract('X', 'users', { http: { method: 'FETCH', paths: ['/x'] } as never })] },
      ],
      [
        'a relative override path',
        { ...valid, contracts: [contract('X', 'users', { http: { method: 'GET', paths: ['x'] } })] },
      ],
      ['a negative ttl', { ...valid, ttlMs: -1 }],
      ['an infinite ttl', { ...valid, ttlMs: Infinity }],
      ['an absurd ttl', { ...valid, ttlMs: 365 * 24 * 3600 * 1000 }],
      ['a ttl that is a string', { ...valid, ttlMs: '5000' }],
      ['a withdrawn flag that is not a boolean', { ...valid, withdrawn: 'yes' }],
    ];
    for (const [label, input] of cases) {
      it(`rejects ${label} with a reason, without throwing or changing anything`, () => {
        const { registry, changes, warnings } = setup();
        registry.apply(valid);
        const result = registry.apply(input);
        expect(result.accepted).to.equal(false);
        expect(result.changed).to.equal(false);
        if (!result.accepted) expect(result.reason).to.be.a('string').and.not.equal('');
        expect(warnings).to.have.length(1);
        expect(registry.contracts().map((c) => c.messageType)).to.deep.equal(['ListUsersQuery']);
        expect(changes).to.have.length(1);
      });
    }

    it('rejects input that cannot be cloned', () => {
      const { registry } = setup();
      const result = registry.apply({ ...valid, contracts: [contract('X', 'users', { inputSchema: { f: () => 1 } })] });
      expect(result.accepted).to.equal(false);
    });

    it('keeps only known contract fields and copies them', () => {
      const raw = { ...contract('X'), extra: 'dropped', inputSchema: { type: 'object' } };
      const result = validateAnnouncement({ ...valid, contracts: [raw] });
      expect(result.ok).to.equal(true);
      if (!result.ok) return;
      expect(result.announcement.contracts[0]).to.not.have.property('extra');
      raw.inputSchema.type = 'changed';
      expect(result.announcement.contracts[0]?.inputSchema.type).to.equal('object');
    });
  });

  it('survives a throwing change listener', () => {
    const { registry } = setup();
    registry.on('change', () => {
      throw new Error('listener bug');
    });
    expect(() => registry.apply(announce('users', 'u1', [contract('ListUsersQuery')]))).to.not.throw();
    expect(registry.contracts()).to.have.length(1);
  });

  it('hands out frozen contracts, so callers cannot change the registry', () => {
    const { registry } = setup();
    registry.apply(announce('users', 'u1', [contract('ListUsersQuery')]));
    expect(() => registry.contracts()[0]!.requiredPermissions.push('hacked')).to.throw(TypeError);
    expect(() => {
      (registry.get('ListUsersQuery') as { public?: boolean }).public = true;
    }).to.throw(TypeError);
    expect(registry.get('ListUsersQuery')?.requiredPermissions).to.deep.equal(['users:read']);
    expect(registry.get('ListUsersQuery')?.public).to.equal(undefined);
  });

  it('hands out one object per contract, frozen once as it entered the pool', () => {
    const { registry } = setup();
    const changes: Contract[][] = [];
    registry.on('change', (contracts) => changes.push(contracts));
    registry.apply(announce('users', 'u1', [contract('ListUsersQuery'), contract('GetUserQuery')]));
    const served = registry.get('ListUsersQuery');
    expect(Object.isFrozen(served)).to.equal(true);
    expect(Object.isFrozen(served?.inputSchema)).to.equal(true);
    expect(registry.contracts()).to.include(served);
    expect(changes[0]).to.include(served);
    // A second instance announcing the same contract, and another contract changing, leave it the same object.
    registry.apply(announce('users', 'u2', [contract('ListUsersQuery'), contract('GetUserQuery')]));
    registry.apply(announce('orders', 'o1', [contract('ListOrdersQuery', 'orders')]));
    expect(registry.get('ListUsersQuery')).to.equal(served);
    // A changed contract is a new object.
    const changed = { ...contract('ListUsersQuery'), requiredPermissions: ['users:list'] };
    registry.apply(announce('users', 'u1', [changed, contract('GetUserQuery')]));
    registry.apply(announce('users', 'u2', [changed, contract('GetUserQuery')]));
    expect(registry.get('ListUsersQuery')).not.to.equal(served);
    expect(registry.get('ListUsersQuery')?.requiredPermissions).to.deep.equal(['users:list']);
  });

  it('expires on a timer that does not hold the process open', async () => {
    let now = 0;
    const registry = new ContractRegistry({ now: () => now });
    registry.apply(announce('users', 'u1', [contract('ListUsersQuery')], 100));
    const changed = new Promise<void>((resolve) => registry.once('change', () => resolve()));
    now = 200;
    registry.startExpiry(5);
    await changed;
    registry.stop();
    expect(registry.contracts()).to.deep.equal([]);
  });
});
