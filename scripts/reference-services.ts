/**
 * The reference services (users and auth, sharing one in-memory store) in their own process, on the RabbitMQ of
 * BUS_URL (prefix BUS_PREFIX): what docker-compose.yml and the Kubernetes example run beside the gateway.
 * SIGTERM withdraws their contracts first, so the gateway stops routing to them before they exit.
 */
import { createTransport } from '../plugin/bus';
import { startUsersService } from '../examples/users-service';
import { startAuthService } from '../examples/auth-service';
import { UserStore } from '../examples/users-service/store';
import { seedAdmin } from './seed-admin';
import { stopOnSignals } from '../sdk';
import { errorMessage } from '../plugin/errors';

async function main(): Promise<void> {
  const url = process.env.BUS_URL ?? '';
  if (!/^amqps?:\/\//i.test(url)) throw new Error('BUS_URL must be an amqp:// URL (the embedded bus cannot reach another process)');
  const transport = createTransport({ url, prefix: process.env.BUS_PREFIX });
  await transport.start();
  const store = new UserStore();
  await seedAdmin(store);
  const services = [await startUsersService(transport, { store }), await startAuthService(transport, { store })];
  stopOnSignals(services, transport, { log: (m) => console.log(`[reference-services] ${m}`) });
  console.log(`[reference-services] ready: ${services.map((s) => s.instanceId).join(', ')}`);
}

main().catch((err) => {
  console.error(`[reference-services] start failed: ${errorMessage(err)}`);
  process.exit(1);
});
