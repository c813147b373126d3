import { expect } from 'chai';
import { ContractRegistry } from '../../plugin/contracts/registry';
import { validateAnnouncement } from '../../plugin/contracts/announcement-validation';
import type { Contract } from '../../plugin/contracts/types';

const CONTRACT: Contract = {
  messageType: 'ListReportsQuery',
  targetService: 'reports',
  inputSchema: { type: 'object' },
  outputSchema: {},
  requiredPermissions: [],
};

function announcement(instanceId: string, maintenance?: unknown, ttlMs = 10_000): Record<string, unknown> {
  return {
    service: 'reports',
    instanceId,
    contracts: [CONTRACT],
    ttlMs,
    ...(maintenance === undefined ? {} : { maintenance }),
  };
}

function setup() {
  let now = 1_000;
  const registry = new ContractRegistry({ now: () => now });
  const transitions: Array<[string, number | undefined]> = [];
  registry.on('maintenance', (service, seconds) => transitions.push([service, seconds]));
  return { registry, transitions, tick: (ms: number) => (now += ms) };
}

describe('maintenance announced by a service', () => {
  it('is an integer number of seconds from 1 to 86400; anything else refuses the announcement', () => {
    expect(validateAnnouncement(announcement('r1', { retryAfterSeconds: 30 }))).to.deep.include({ ok: true });
    for (const bad of [
      { retryAfterSeconds: 0 },
      { retryAfterSeconds: 86_401 },
      { retryAfterSeconds: 1.5 },
      { retryAfterSeconds: '30' },
      {},
      true,
      'soon',
    ]) {
      const result = validateAnnouncement(announcement('r1', bad));
      expect(result.ok, JSON.stringify(bad)).to.equal(false);
    }
    expect(validateAnnouncement(announcement('r1', { retryAfterSeconds: 86_400 })).ok).to.equal(true);
  });

  it('keeps only the field it knows', () => {
    const result = validateAnnouncement(announcement('r1', { retryAfterSeconds: 30, extra: 'x' }));
    expect(result.ok && result.announcement.maintenance).to.deep.equal({ retryAfterSeconds: 30 });
  });

  it('holds only while every live instance says so, with the soonest Retry-After; one event per change', () => {
    const { registry, transitions } = setup();
    registry.apply(announcement('r1', { retryAfterSeconds: 60 }));
    expect(registry.maintenance('reports')).to.equal(60);
    registry.apply(announcement('r2'));
    expect(registry.maintenance('reports'), 'r2 still serves').to.equal(undefined);
    registry.apply(announcement('r2', { retryAfterSeconds: 30 }));
    expect(registry.maintenance('reports')).to.equal(30);
    expect(registry.servicesInMaintenance()).to.deep.equal([{ service: 'reports', retryAfterSeconds: 30 }]);
    // The same announcement again is no change.
    registry.apply(announcement('r2', { retryAfterSeconds: 30 }));
    // An announcement without it ends the instance's maintenance.
    registry.apply(announcement('r1'));
    expect(registry.maintenance('reports')).to.equal(undefined);
    expect(registry.servicesInMaintenance()).to.deep.equal([]);
    expect(transitions).to.deep.equal([
      ['reports', 60],
      ['reports', undefined],
      ['reports', 30],
      ['reports', undefined],
    ]);
  });

  it('counts live instances only: one that withdraws or whose lease runs out no longer keeps a service serving', () => {
    const { registry, tick } = setup();
    registry.apply(announcement('r1', { retryAfterSeconds: 45 }, 60_000));
    registry.apply(announcement('r2', undefined, 5_000));
    expect(registry.maintenance('reports')).to.equal(undefined);
    tick(5_000);
    registry.expire();
    expect(registry.maintenance('reports')).to.equal(45);
    registry.apply({ service: 'reports', instanceId: 'r1', contracts: [], ttlMs: 0, withdrawn: true });
    expect(registry.maintenance('reports'), 'no instance: not maintenance, no consumer').to.equal(undefined);
  });

  it('keeps the routes of a service in maintenance: its contracts stay announced', () => {
    const { registry } = setup();
    registry.apply(announcement('r1', { retryAfterSeconds: 45 }));
    expect(registry.get('ListReportsQuery')?.targetService).to.equal('reports');
  });
});
