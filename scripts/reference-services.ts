/**
 * The reference services (users and auth, on one database) in their own process, on the RabbitMQ of BUS_URL
 * (prefix BUS_PREFIX): what docker-compose.yml and the Kubernetes example run beside the gateway. Their data:
 * DATABASE_URL's PostgreSQL (what several instances share), or else the embedded database in DATA_DIR
 * (default .gateway/data). SIGTERM withdraws their contracts first, so the gateway stops routing to them
 * before they exit. HEALTH_PORT (unset: none) serves GET /health for probes: 200 while the bus and the database answer.
 */
import { createTransport } from '../plugin/bus';
import { stopOnSignals } from '../sdk';
import { storageSettings } from './storage-settings';
import { openReferenceDatabase, startReferenceStack } from './reference-stack';
import { errorMessage } from '../plugin/errors/describe';
import { startHealthServer } from './health-server';
import { helpIfAsked, ONE_SERVICE_SETTINGS } from './script-help';

helpIfAsked(`usage: node dist/scripts/reference-services.js

The reference users and auth services in one process, on the RabbitMQ of BUS_URL (what the image's
reference-services target runs). HEALTH_PORT (unset: none) serves GET /health for probes.
${ONE_SERVICE_SETTINGS}`);

async function main(): Promise<void> {
  const url = process.env.BUS_URL ?? '';
  if (!/^amqps?:\/\//i.test(url))
    throw new Error('BUS_URL must be an amqp:// URL (the embedded bus cannot reach another process)');
  const healthPort = process.env.HEALTH_PORT ? Number(process.env.HEALTH_PORT) : undefined;
  if (healthPort !== undefined && !(Number.isInteger(healthPort) && healthPort > 0 && healthPort < 65536))
    throw new Error('HEALTH_PORT must be a port number (1-65535)');
  const log = (m: string) => console.log(`[reference-services] ${m}`);
  const storage = storageSettings(process.env, '.gateway/data');
  const database = await openReferenceDatabase(storage, log);
  const transport = createTransport({ url, prefix: process.env.BUS_PREFIX });
  await transport.start();
  const { services, db } = await startReferenceStack(transport, database, { dataDir: storage.dataDir, log });
  // HEALTH_PORT: probes (deploy/kubernetes) see whether the bus and the database answer.
  const health = healthPort
    ? await startHealthServer(
        healthPort,
        async () => transport.state() === 'up' && (await db.query('select 1').then(() => true)),
        undefined,
        () => {
          // The broker node (host:port of BUS_URL's list) the services are on, while connected.
          const node = transport.node?.();
          return node === undefined ? {} : { bus: { node } };
        },
      )
    : undefined;
  // The database closes last, after the handlers in flight have finished.
  stopOnSignals(services, transport, {
    log,
    afterStop: async () => {
      health?.close();
      await db.close();
    },
  });
  console.log(`[reference-services] ready: ${services.map((s) => s.instanceId).join(', ')}`);
}

main().catch((err) => {
  console.error(`[reference-services] start failed: ${errorMessage(err)}`);
  process.exit(1);
});
