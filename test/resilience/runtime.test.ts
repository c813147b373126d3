import { expect } from 'chai';
import { InProcessTransport } from '../../plugin/bus/inprocess';
import { defaultHub } from '../../plugin/bus/inprocess/hub';
import { serve } from '../../sdk';
import { rejection, requestFor } from '../bus/conformance';
import { testRuntime } from '../support/runtime';

const SERVICE = 'guard-embedded-service';
const TYPE = 'GetGuardEmbeddedQuery';

async function until(check: () => boolean, ms = 3000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** The runtime's own transport is guarded, on the embedded bus as on RabbitMQ: announced maintenance is answered. */
describe('the runtime guards its transport (embedded bus)', () => {
  it('answers a service in maintenance 503 with its Retry-After, logs the change once, and serves it again after', async () => {
    const lines: string[] = [];
    const log = {
      debug: () => undefined,
      info: (m: string) => lines.push(m),
      warn: (m: string) => lines.push(m),
      error: () => undefined,
    };
    const runtime = testRuntime({ announcementApplyIntervalMs: 10 }, log);
    const bus = new InProcessTransport(defaultHub());
    let handled = 0;
    await runtime.start();
    await bus.start();
    const running = await serve({
      transport: bus,
      service: SERVICE,
      operations: [
        {
          contract: { messageType: TYPE, inputSchema: { type: 'object' }, outputSchema: {}, requiredPermissions: [] },
          handle: () => {
            handled += 1;
            return { ok: true };
          },
        },
      ],
    });
    try {
      await until(() => runtime.discovery.contract(TYPE) !== undefined);
      const request = requestFor(SERVICE, {}, TYPE);
      expect((await runtime.services.transport.request(request, 2000)).ok).to.equal(true);
      await running.maintenance({ retryAfterSeconds: 7 });
      await until(() => runtime.discovery.registry.maintenance(SERVICE) !== undefined);
      const refused = await rejection(runtime.services.transport.request(request, 2000));
      expect(refused.status).to.equal(503);
      expect(refused.headers['Retry-After']).to.equal('7');
      expect(refused.extra).to.deep.equal({ retryAfter: 7, service: SERVICE });
      expect(handled).to.equal(1);
      expect(runtime.discovery.registry.servicesInMaintenance()).to.deep.equal([
        { service: SERVICE, retryAfterSeconds: 7 },
      ]);
      await running.maintenance(false);
      await until(() => runtime.discovery.registry.maintenance(SERVICE) === undefined);
      expect((await runtime.services.transport.request(request, 2000)).ok).to.equal(true);
      expect(lines.filter((l) => l.includes(`service ${SERVICE} is in maintenance`))).to.have.length(1);
      expect(lines.filter((l) => l.includes(`service ${SERVICE} is out of maintenance`))).to.have.length(1);
    } finally {
      await running.stop();
      await bus.close();
      await runtime.close();
    }
  });
});
