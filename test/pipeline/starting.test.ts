import '../auth/support';
import { expect } from 'chai';
import { contractRouterPolicy } from '../../policies/contract-router';
import { schemaValidationPolicy } from '../../policies/schema-validation';
import { resolveContract } from '../../plugin/pipeline/resolve-contract';
import { fakeReq, run } from '../auth/support';

const RUNTIME_KEY = Symbol.for('express-gateway-plugin-contracts.runtime');

/** A request that arrives before the plugin has started its runtime: 503, never a crash or a 500. */
describe('steps before the runtime has started', () => {
  let saved: unknown;
  before(() => {
    saved = (globalThis as Record<symbol, unknown>)[RUNTIME_KEY];
    delete (globalThis as Record<symbol, unknown>)[RUNTIME_KEY];
  });
  after(() => {
    if (saved !== undefined) (globalThis as Record<symbol, unknown>)[RUNTIME_KEY] = saved;
  });

  for (const [name, policy] of [['schema-validation', schemaValidationPolicy], ['contract-router', contractRouterPolicy]] as const) {
    it(`${name} answers 503 SERVICE_UNAVAILABLE "The gateway is starting"`, async () => {
      const out = await run(policy.policy({ messageType: 'GetUserQuery' }), fakeReq());
      expect(out.next).to.equal(false);
      expect(out.status).to.equal(503);
      expect(out.body).to.include({ code: 'SERVICE_UNAVAILABLE', message: 'The gateway is starting' });
    });
  }

  it('resolveContract throws the same error', () => {
    const req = fakeReq();
    expect(() => resolveContract(req, {} as never, { messageType: 'GetUserQuery' })).to.throw('The gateway is starting');
  });
});
