import { createTransport } from '../plugin/bus';
import type { Transport } from '../plugin/bus/transport';
import { stopOnSignals, type RunningService } from '../sdk';
import type { Database } from '../examples/storage/database';
import { errorMessage } from '../plugin/errors/describe';
import { storageSettings } from './storage-settings';
import { openReferenceDatabase } from './reference-stack';

/**
 * One reference service alone in its process, on the RabbitMQ of BUS_URL (prefix BUS_PREFIX), so that it can log
 * in as a broker user of its own; it takes requests from BUS_GATEWAY_USER's (default `gateway`). Its data:
 * DATABASE_URL's PostgreSQL (what the users and auth services share), or the embedded database in DATA_DIR.
 * SIGTERM withdraws its contracts, finishes the handlers in flight, then closes the database.
 */
export function runOneService(
  name: string,
  start: (transport: Transport, db: Database, dataDir: string, log: (line: string) => void) => Promise<RunningService>,
): void {
  const log = (m: string) => console.log(`[${name}] ${m}`);
  const main = async (): Promise<void> => {
    const url = process.env.BUS_URL ?? '';
    if (!/^amqps?:\/\//i.test(url))
      throw new Error('BUS_URL must be an amqp:// URL (the embedded bus cannot reach another process)');
    const storage = storageSettings(process.env, '.gateway/data');
    const db = await openReferenceDatabase(storage, log);
    try {
      const transport = createTransport({ url, prefix: process.env.BUS_PREFIX });
      await transport.start();
      const service = await start(transport, db, storage.dataDir, log);
      stopOnSignals(service, transport, { log, afterStop: () => db.close() });
      log(`ready (${service.instanceId})`);
    } catch (err) {
      await db.close().catch(() => undefined);
      throw err;
    }
  };
  main().catch((err) => {
    console.error(`[${name}] start failed: ${errorMessage(err)}`);
    process.exit(1);
  });
}
