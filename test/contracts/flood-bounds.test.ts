import { expect } from 'chai';
import { ContractRegistry } from '../../plugin/contracts/registry';
import { AnnouncementInbox } from '../../plugin/contracts/inbox';
import type { Contract } from '../../plugin/contracts/types';

function contract(messageType: string, targetService: string, description = ''): Contract {
  return {
    messageType,
    targetService,
    inputSchema: { type: 'object', description },
    outputSchema: {},
    requiredPermissions: [],
  };
}

function announce(service: string, contracts: Contract[], instanceId = `${service}-1`) {
  return { service, instanceId, ttlMs: 10_000, contracts };
}

/** What a flood under new service names on one shared credential costs the registry and the inbox. */
describe('announcements under ever new service names', () => {
  it('refuses a new service unread once the total budget is within one announcement of full', () => {
    const warnings: string[] = [];
    const registry = new ContractRegistry({
      budget: { perUserBytes: 40_000, totalBytes: 80_000 },
      limits: { maxBytes: 10_000 },
      logger: { warn: (m) => warnings.push(m) },
    });
    for (let i = 0; i < 10; i += 1)
      registry.apply(announce(`svc${i}`, [contract(`Svc${i}Command`, `svc${i}`, 'x'.repeat(7_000))]));
    expect(registry.retained().totalBytes).to.be.above(70_000);
    // Not even read: an announcement that is no announcement at all gets the same answer.
    const late = registry.apply({ service: 'late-service', instanceId: 'l1', contracts: 'not a list' });
    expect(late).to.deep.include({ accepted: false });
    expect((late as { reason: string }).reason).to.match(
      /^the gateway retains \d+ bytes of contracts, too close to 80000 for a new service \(announcementRetainedBytesTotal\)$/,
    );
    // A known service still re-announces, and a small one still fits where there is room.
    expect(registry.apply(announce('svc0', [contract('Svc0Command', 'svc0', 'y'.repeat(7_000))])).accepted).to.equal(
      true,
    );
  });

  it('refuses a service beyond announcedServicesMax before reading it', () => {
    const registry = new ContractRegistry({ limits: { maxServices: 2 } });
    registry.apply(announce('a', [contract('ACommand', 'a')]));
    registry.apply(announce('b', [contract('BCommand', 'b')]));
    const third = registry.apply({ service: 'c', instanceId: 'c1', contracts: 'not a list' });
    expect(third).to.deep.equal({
      accepted: false,
      changed: false,
      reason: 'more than 2 services (announcedServicesMax)',
    });
  });

  it('logs at most 20 refused claims per change, and counts the rest in one line', () => {
    const warnings: string[] = [];
    const registry = new ContractRegistry({ logger: { warn: (m) => warnings.push(m) } });
    const types = Array.from({ length: 30 }, (_, i) => `Shared${i}Command`);
    registry.apply(
      announce(
        'first',
        types.map((t) => contract(t, 'first')),
      ),
    );
    registry.apply(
      announce(
        'second',
        types.map((t) => contract(t, 'second')),
      ),
    );
    expect(registry.refusals()).to.have.length(30);
    expect(warnings.filter((w) => /refused Shared\d+Command from second/.test(w))).to.have.length(20);
    expect(warnings).to.include(
      'contract registry: refused 10 more claims (GET /api/discovery/contracts lists every refusal under conflicts.refused)',
    );
  });

  it('applies about 1 MB of waiting announcements per batch, the rest in the next ones', () => {
    const registry = new ContractRegistry();
    const inbox = new AnnouncementInbox(registry, { intervalMs: 60_000 });
    for (let i = 0; i < 10; i += 1)
      inbox.offer(announce(`big${i}`, [contract(`Big${i}Command`, `big${i}`)]), { digest: `d${i}`, bytes: 300_000 });
    inbox.flush();
    expect(registry.instances()).to.have.length(3); // 900 KB; a fourth would make 1.2 MB
    inbox.flush();
    expect(registry.instances()).to.have.length(6);
    // One announcement over the batch's bytes still goes, alone.
    inbox.offer(announce('huge', [contract('HugeCommand', 'huge')]), { digest: 'h', bytes: 2_000_000 });
    inbox.flush();
    inbox.flush();
    inbox.flush();
    expect(registry.instances()).to.have.length(11);
    inbox.stop();
  });
});
