import { expect } from 'chai';
import { ContractRegistry } from '../../plugin/contracts/registry';
import { OpenApiCache } from '../../plugin/openapi/cache';
import { RoutePlan } from '../../plugin/contracts/route-plan';
import type { Contract } from '../../plugin/contracts/types';

const widget = (messageType: string): Contract => ({
  messageType,
  targetService: 'widgets',
  inputSchema: { type: 'object' },
  outputSchema: {},
  requiredPermissions: ['widgets:x'],
});

describe('OpenApiCache', () => {
  let registry: ContractRegistry;
  let plan: RoutePlan;
  let cache: OpenApiCache;
  beforeEach(() => {
    registry = new ContractRegistry();
    // As the runtime builds it: on the route plan of the registry.
    plan = new RoutePlan(registry, {});
    cache = new OpenApiCache(registry, () => ({ routes: plan.routes() })).start();
  });
  afterEach(() => {
    cache.stop();
    plan.stop();
  });

  it('serves the same built document to every request until the contracts change', () => {
    const first = cache.current();
    expect(cache.current()).to.equal(first);
    expect(cache.current().json).to.equal(first.json);
    expect(cache.buildCount()).to.equal(1);
  });

  it("rebuilds on the registry's change event, not on an unchanged re-announcement", () => {
    const before = cache.current();
    registry.apply({ service: 'widgets', instanceId: 'a', contracts: [widget('CreateWidgetCommand')], ttlMs: 60000 });
    const after = cache.current();
    expect(cache.buildCount()).to.equal(2);
    expect(after.etag).not.to.equal(before.etag);
    expect(JSON.parse(after.json).paths).to.have.property('/api/widgets');
    expect(JSON.parse(before.json).paths).not.to.have.property('/api/widgets');
    registry.apply({ service: 'widgets', instanceId: 'a', contracts: [widget('CreateWidgetCommand')], ttlMs: 60000 });
    expect(cache.buildCount()).to.equal(2);
    registry.apply({ service: 'widgets', instanceId: 'a', contracts: [], ttlMs: 0, withdrawn: true });
    expect(JSON.parse(cache.current().json).paths).not.to.have.property('/api/widgets');
    expect(cache.buildCount()).to.equal(3);
  });

  it('stops following the registry once stopped', () => {
    cache.stop();
    registry.apply({ service: 'widgets', instanceId: 'a', contracts: [widget('CreateWidgetCommand')], ttlMs: 60000 });
    expect(cache.buildCount()).to.equal(1);
  });
});
