/**
 * The reference users service alone, in its own process, on the RabbitMQ of BUS_URL (prefix BUS_PREFIX).
 * The benchmark runs it beside a gateway started with START_REFERENCE_SERVICES=false, so the gateway and
 * the service are separate processes, as in a deployment. Its users: DATABASE_URL's PostgreSQL, or else the
 * embedded database in DATA_DIR (default .gateway/data).
 */
import { createTransport } from '../plugin/bus';
import { startUsersService } from '../examples/users-service';
import { UserStore } from '../examples/users-service/store';
import { openDatabase } from '../examples/storage';
import { errorMessage } from '../plugin/errors/describe';
import { storageSettings } from './storage-settings';

async function main(): Promise<void> {
  const url = process.env.BUS_URL ?? '';
  if (!/^amqps?:\/\//i.test(url))
    throw new Error('BUS_URL must be an amqp:// URL (the embedded bus cannot reach another process)');
  const transport = createTransport({ url, prefix: process.env.BUS_PREFIX });
  await transport.start();
  const db = await openDatabase(storageSettings(process.env, '.gateway/data'));
  const service = await startUsersService(transport, { store: new UserStore(db) });
  console.log(`[users-service] ready (${service.instanceId})`);
  const stop = async () => {
    await service.stop().catch(() => undefined);
    await transport.close().catch(() => undefined);
    await db.close().catch(() => undefined);
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop());
  process.once('SIGINT', () => void stop());
}

main().catch((err) => {
  console.error(`[users-service] start failed: ${errorMessage(err)}`);
  process.exit(1);
});
