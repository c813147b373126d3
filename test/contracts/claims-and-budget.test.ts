import { expect } from 'chai';
import { ContractRegistry } from '../../plugin/contracts/registry';
import { AnnouncementInbox } from '../../plugin/contracts/inbox';
import type { Contract } from '../../plugin/contracts/types';

function contract(messageType: string, targetService: string, extra: Partial<Contract> = {}): Contract {
  return {
    messageType,
    targetService,
    inputSchema: { type: 'object' },
    outputSchema: {},
    requiredPermissions: [],
    ...extra,
  };
}

/** A contract of about `bytes` bytes as JSON, made distinct by `tag`. */
function sized(messageType: string, service: string, bytes: number, tag: string): Contract {
  return contract(messageType, service, {
    inputSchema: { type: 'object', description: `${tag}:${'x'.repeat(bytes)}` },
  });
}

function setup(options: ConstructorParameters<typeof ContractRegistry>[0] = {}) {
  let now = 1_000;
  const warnings: string[] = [];
  const registry = new ContractRegistry({ now: () => now, logger: { warn: (m) => warnings.push(m) }, ...options });
  return { registry, warnings, tick: (ms: number) => (now += ms) };
}

describe('claims from a services file, leases and the retained-bytes budget', () => {
  it('with ownedOnly, a listed service announcing a type it does not own is refused and listed, even with nobody holding it', () => {
    const rules = {
      messageTypes: { 'auth-service': ['AuthenticateCommand'], 'rogue-service': ['Rogue*'] },
      ownedOnly: true,
    };
    const { registry, warnings } = setup({ rules });
    registry.apply({
      service: 'rogue-service',
      instanceId: 'r1',
      ttlMs: 10_000,
      contracts: [
        contract('AuthenticateCommand', 'rogue-service'),
        contract('UnlistedCommand', 'rogue-service'),
        contract('RogueQuery', 'rogue-service'),
      ],
    });
    expect(registry.contracts().map((c) => c.messageType)).to.deep.equal(['RogueQuery']);
    expect(registry.refusals()).to.deep.equal([
      {
        service: 'rogue-service',
        messageType: 'AuthenticateCommand',
        reason: 'message type is pinned to auth-service',
        holder: 'auth-service',
      },
      {
        service: 'rogue-service',
        messageType: 'UnlistedCommand',
        reason: 'message type is not among those the services file gives rogue-service',
      },
    ]);
    expect(warnings.filter((w) => w.includes('refused AuthenticateCommand from rogue-service'))).to.have.length(1);
    // The owner comes (back): its claim is served at once, whatever the rogue still announces.
    registry.apply({
      service: 'auth-service',
      instanceId: 'a1',
      ttlMs: 10_000,
      contracts: [contract('AuthenticateCommand', 'auth-service')],
    });
    expect(registry.get('AuthenticateCommand')?.targetService).to.equal('auth-service');
  });

  it('clamps a lease over maxLeaseMs, logged once, so a claimant that died lapses within it', () => {
    const { registry, warnings, tick } = setup({ maxLeaseMs: 30_000 });
    const hour = { service: 'svc', instanceId: 'i1', ttlMs: 3_600_000, contracts: [contract('DoCommand', 'svc')] };
    registry.apply(hour);
    registry.apply(hour);
    expect(
      warnings.filter((w) => w.includes('asked for a lease of 3600000 ms; clamped to 30000 ms (maxLeaseMs)')),
    ).to.have.length(1);
    expect(registry.instances()[0]?.leaseExpiresAt).to.equal(31_000);
    expect(registry.renew('svc', 'i1')).to.equal(true);
    tick(30_001);
    registry.expire();
    expect(registry.contracts()).to.deep.equal([]);
  });

  it('instances announcing identical contracts share one copy, counted once', () => {
    const { registry } = setup({ budget: { perUserBytes: 10_000, totalBytes: 20_000 } });
    const contracts = [sized('BigCommand', 'svc', 3_000, 'same')];
    for (let i = 0; i < 10; i += 1)
      expect(
        registry.apply({ service: 'svc', instanceId: `i${i}`, ttlMs: 10_000, contracts }, { userId: 'svc' }).accepted,
      ).to.equal(true);
    const retained = registry.retained();
    expect(retained.totalBytes).to.be.within(3_000, 3_200);
    expect(retained.byUser).to.deep.equal({ 'broker user svc': retained.totalBytes });
    expect(registry.instances()).to.have.length(10);
  });

  it('refuses an announcement that would take a broker user over its budget, and the total over its own; leaving frees them', () => {
    const { registry, warnings } = setup({ budget: { perUserBytes: 10_000, totalBytes: 15_000 } });
    const announce = (user: string, instanceId: string, tag: string) =>
      registry.apply(
        {
          service: `${user}-svc`,
          instanceId,
          ttlMs: 10_000,
          contracts: [sized(`${user}Command`, `${user}-svc`, 4_000, tag)],
        },
        { userId: user },
      );
    expect(announce('flood', 'f1', 'a').accepted).to.equal(true);
    expect(announce('flood', 'f2', 'b').accepted).to.equal(true);
    const over = announce('flood', 'f3', 'c');
    expect(over.accepted).to.equal(false);
    expect(warnings.join('\n')).to.match(
      /broker user flood would retain 12\d{3} bytes of contracts, over 10000 \(announcementRetainedBytesPerUser\)/,
    );
    // Re-announcing a new version in place is not growth: f1's old bytes are released.
    expect(announce('flood', 'f1', 'a2').accepted).to.equal(true);
    // Another user is not held back by the flooder's budget, only by the total.
    expect(announce('other', 'o1', 'x').accepted).to.equal(true);
    expect(announce('third', 't1', 'y').accepted).to.equal(false);
    expect(warnings.join('\n')).to.match(
      /the gateway would retain 16\d{3} bytes of contracts, over 15000 \(announcementRetainedBytesTotal\)/,
    );
    registry.apply({ service: 'flood-svc', instanceId: 'f2', withdrawn: true }, { userId: 'flood' });
    expect(announce('third', 't1', 'y').accepted).to.equal(true);
    expect(registry.retained().byUser['broker user flood']).to.be.within(4_000, 4_200);
  });

  it('the inbox refuses a service the services file does not list, and holds at most the budget of announcements waiting', () => {
    const warnings: string[] = [];
    const logger = { warn: (m: string) => warnings.push(m) };
    const registry = new ContractRegistry({ logger });
    const inbox = new AnnouncementInbox(registry, {
      intervalMs: 60_000,
      logger,
      announcers: { users: { 'users-service': 'users-service' }, required: true, listedOnly: true },
      pendingBudget: { perUserBytes: 10_000, totalBytes: 100_000 },
    });
    inbox.offer(
      {
        service: 'evil-service',
        instanceId: 'e1',
        ttlMs: 10_000,
        contracts: [contract('EvilCommand', 'evil-service')],
      },
      { userId: 'evil-service' },
    );
    expect(warnings.join('\n')).to.include(
      'refused announcement for service evil-service instance e1: evil-service is not a service of the services file',
    );
    for (let i = 0; i < 10; i += 1) {
      inbox.offer(
        {
          service: 'users-service',
          instanceId: `u${i}`,
          ttlMs: 10_000,
          contracts: [sized('CreateUserCommand', 'users-service', 3_000, String(i))],
        },
        { userId: 'users-service' },
      );
    }
    expect(warnings.join('\n')).to.match(/broker user users-service has 1\d{4} bytes waiting, over 10000/);
    inbox.flush();
    expect(registry.instances().map((i) => i.instanceId)).to.deep.equal(['u0', 'u1', 'u2']);
    inbox.stop();
  });

  it('without required broker users, a shared user (guest) tells nobody apart: each service has a budget of its own', () => {
    const warnings: string[] = [];
    const logger = { warn: (m: string) => warnings.push(m) };
    const registry = new ContractRegistry({ logger, budget: { perUserBytes: 10_000, totalBytes: 100_000 } });
    const inbox = new AnnouncementInbox(registry, {
      intervalMs: 60_000,
      logger,
      pendingBudget: { perUserBytes: 10_000, totalBytes: 100_000 },
    });
    for (let s = 0; s < 5; s += 1) {
      for (let i = 0; i < 2; i += 1) {
        const service = `s${s}-service`;
        inbox.offer(
          {
            service,
            instanceId: `${service}-${i}`,
            ttlMs: 10_000,
            contracts: [sized(`S${s}Command`, service, 4_000, `${s}.${i}`)],
          },
          { userId: 'guest' },
        );
      }
    }
    inbox.flush();
    expect(registry.instances()).to.have.length(10);
    expect(Object.keys(registry.retained().byUser)).to.have.length(5);
    inbox.offer(
      {
        service: 's0-service',
        instanceId: 's0-service-9',
        ttlMs: 10_000,
        contracts: [sized('S0Command', 's0-service', 4_000, 'more')],
      },
      { userId: 'guest' },
    );
    inbox.flush();
    expect(warnings.join('\n')).to.match(/service s0-service would retain 12\d{3} bytes of contracts, over 10000/);
    inbox.stop();
  });
});
