/**
 * A test service in its own process (graceful-stop tests): `POST /api/naps {"ms": n}` sleeps n ms, then answers.
 * Runs on the RabbitMQ of BUS_URL with BUS_PREFIX, and stops the way a service should: stopOnSignals.
 */
import { createTransport } from '../../plugin/bus';
import { serve, stopOnSignals } from '../../sdk';

async function main(): Promise<void> {
  const transport = createTransport({ url: process.env.BUS_URL, prefix: process.env.BUS_PREFIX });
  await transport.start();
  const running = await serve({
    transport,
    service: 'nap-service',
    operations: [
      {
        contract: {
          messageType: 'CreateNapCommand',
          public: true,
          inputSchema: {
            type: 'object',
            properties: { ms: { type: 'integer', minimum: 0, maximum: 60000 } },
            required: ['ms'],
          },
          outputSchema: { type: 'object' },
          requiredPermissions: [],
        },
        handle: async ({ ms }) => {
          await new Promise((r) => setTimeout(r, Number(ms)));
          return { slept: ms, pid: process.pid };
        },
      },
    ],
  });
  stopOnSignals(running, transport, {
    drainMs: Number(process.env.DRAIN_MS ?? 1000),
    log: (m) => console.log(`[nap-service] ${m}`),
  });
  console.log('[nap-service] ready');
}

main().catch((err) => {
  console.error(`[nap-service] start failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
