import '../auth/support';
import { expect } from 'chai';
import { contractRouterPolicy } from '../../policies/contract-router';
import { schemaValidationPolicy } from '../../policies/schema-validation';
import { contractOf } from '../../plugin/pipeline/resolve-contract';
import { runContext } from '../../plugin/request/context';
import { fakeReq, run } from '../auth/support';
import { testRuntime } from '../support/runtime';

const NOT_CONNECTED = 'The message bus is not connected: the routes are not known yet';

/**
 * A request that arrives before the runtime's bus is up (the gateway is starting, or the broker is away): 503 with
 * Retry-After, never a 404 a client would take as final, a crash or a 500.
 */
describe('steps before the bus is up', () => {
  const runtime = testRuntime();
  after(() => runtime.close());

  for (const [name, factory] of [
    ['schema-validation', schemaValidationPolicy],
    ['contract-router', contractRouterPolicy],
  ] as const) {
    it(`${name} answers 503 SERVICE_UNAVAILABLE with Retry-After`, async () => {
      expect(runtime.services.transport.state()).to.not.equal('up');
      const out = await run(factory(runtime.services).policy({ messageType: 'GetUserQuery' }), fakeReq());
      expect(out.next).to.equal(false);
      expect(out.status).to.equal(503);
      expect(out.body).to.include({ code: 'SERVICE_UNAVAILABLE', message: NOT_CONNECTED });
      expect(out.headers['retry-after']).to.match(/^\d+$/);
    });
  }

  it('contractOf throws the same error', () => {
    const req = fakeReq();
    expect(() => contractOf(runContext(req), req, { messageType: 'GetUserQuery' }, runtime.services)).to.throw(
      NOT_CONNECTED,
    );
  });
});
