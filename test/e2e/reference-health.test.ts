import { expect } from 'chai';
import { AMQP_URL, freePort, uniquePrefix } from '../support/env';
import { eventually } from '../support/gateway-process';
import { createTestDatabase, type TestDatabase } from '../support/databases';
import { startScriptProcess, type ServiceProcess } from '../support/service-process';
import { TcpProxy, viaPort } from '../support/tcp-proxy';
import { TEST_JWT_SECRET } from '../support/tokens';
import { deleteBusTopology, deleteWorkQueues } from '../support/broker';

/** HEALTH_PORT of scripts/reference-services: what the Kubernetes example's probes ask. */
describe('reference services with HEALTH_PORT', function () {
  this.timeout(90_000);
  const prefix = uniquePrefix('health');
  let db: TestDatabase;
  let proxy: TcpProxy;
  let svc: ServiceProcess | undefined;
  let health: string;
  /** The services' broker address (the proxy): the node /health names. */
  let node: string;

  before(async () => {
    db = await createTestDatabase('health');
    const broker = new URL(AMQP_URL);
    proxy = new TcpProxy({ host: broker.hostname, port: Number(broker.port || 5672) });
    const port = await freePort();
    health = `http://127.0.0.1:${port}/health`;
    const proxyPort = await proxy.listen();
    node = `127.0.0.1:${proxyPort}`;
    svc = await startScriptProcess('scripts/reference-services', {
      BUS_URL: viaPort(AMQP_URL, proxyPort),
      BUS_PREFIX: prefix,
      DATABASE_URL: db.url,
      JWT_SECRET: TEST_JWT_SECRET,
      ADMIN_PASSWORD: 'health-admin-password',
      HEALTH_PORT: String(port),
    });
  });
  after(async () => {
    await svc?.stop();
    await proxy?.close();
    await deleteWorkQueues(AMQP_URL, prefix, ['users-service', 'auth-service']).catch(() => undefined);
    // No gateway here to delete them: the services declared the exchanges on the shared credential.
    await deleteBusTopology(AMQP_URL, prefix).catch(() => undefined);
    await db?.drop();
  });

  it('answers 200 while the bus and the database answer, 404 elsewhere', async () => {
    const res = await fetch(health);
    expect(res.status).to.equal(200);
    expect(await res.json()).to.deep.equal({ status: 'ok', bus: { node } });
    expect((await fetch(health.replace('/health', '/other'))).status).to.equal(404);
  });

  it('answers 503 while the bus is away, 200 once it is back', async () => {
    proxy.refusing = true;
    proxy.killAll();
    await eventually(
      async () => {
        const down = await fetch(health);
        expect(down.status).to.equal(503);
        // No node while the bus is down.
        expect(await down.json()).to.deep.equal({ status: 'unavailable' });
      },
      15_000,
      200,
    );
    proxy.refusing = false;
    await eventually(async () => expect((await fetch(health)).status).to.equal(200), 30_000, 250);
  });

  it('refuses a HEALTH_PORT that is not a port, with one line', async () => {
    const err = await startScriptProcess('scripts/reference-services', {
      BUS_URL: AMQP_URL,
      BUS_PREFIX: uniquePrefix('health-bad'),
      DATABASE_URL: db.url,
      JWT_SECRET: TEST_JWT_SECRET,
      HEALTH_PORT: 'eighty',
    }).then(
      (started) => started.stop().then(() => undefined),
      (e: Error) => e,
    );
    expect(err?.message).to.include('[reference-services] start failed: HEALTH_PORT must be a port number (1-65535)');
  });
});
