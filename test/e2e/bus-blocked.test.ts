import { expect } from 'chai';
import { eventually, startGateway, type GatewayProcess } from '../support/gateway-process';
import { http, httpAs } from '../support/http';
import { freePort, uniquePrefix } from '../support/env';
import { sample, scrape } from '../observability/support';
import { RabbitCluster, rabbitmqBin } from '../support/rabbitmq-cluster';
import { startListService, stopListService } from '../support/list-service';

const admin = httpAs(['admin:all'], 'bus-blocked');
/** A short lease, so the alarm outlasts it several times over. */
const LEASE_MS = 3_000;
/** How long requests are sent once the block is seen: over two leases. */
const BLOCKED_MS = 8_000;

/**
 * A memory alarm on a RabbitMQ node of this test's own (one node, test/support/rabbitmq-cluster.ts; never the
 * machine's): RabbitMQ blocks the connections that publish. The gateway says so (/health 503 naming the alarm, the
 * state metric, one log line), refuses what needs the bus at once with 503 and Retry-After instead of letting it hang,
 * keeps the routes of the services it cannot hear meanwhile, and is back to normal within 5 s of the alarm clearing.
 */
describe('a blocked bus (memory alarm): seen, refused at once, routes kept', function () {
  this.timeout(240_000);
  const prefix = uniquePrefix('blocked');
  let cluster: RabbitCluster | undefined;
  let widgets: Awaited<ReturnType<typeof startListService>> | undefined;
  let gw: GatewayProcess | undefined;
  let metricsUrl = '';

  before(async function () {
    const bin = rabbitmqBin();
    if (!bin) {
      console.log('      skipped: rabbitmq-server is not installed, so no node of the test own can be started');
      this.skip();
    }
    cluster = await RabbitCluster.start(bin!, 1);
    const url = cluster.busUrl();
    widgets = await startListService(url, prefix, 'widgets', LEASE_MS);
    const metricsPort = await freePort();
    metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    gw = await startGateway({
      BUS_URL: url,
      BUS_PREFIX: prefix,
      START_REFERENCE_SERVICES: 'false',
      REQUEST_TIMEOUT_MS: '3000',
      METRICS_PORT: String(metricsPort),
      METRICS_HOST: '127.0.0.1',
    });
    await eventually(async () => {
      const res = await admin('GET', `${gw!.baseUrl}/api/widgets`);
      expect(res.status, res.text).to.equal(200);
    }, 20_000);
  });

  after(async () => {
    await stopListService(widgets);
    await gw?.stop().catch(() => undefined);
    await cluster?.stop();
  });

  it('/health 503 naming the alarm, the metric and a log line; requests 503 at once; routes kept; normal within 5 s after', async () => {
    const c = cluster!;
    const node = c.nodes[0]!;
    const base = gw!.baseUrl;
    await c.ctl(node, ['set_vm_memory_high_watermark', 'absolute', '1']);
    try {
      // RabbitMQ blocks a connection once it publishes: a request makes the gateway publish.
      await eventually(
        async () => {
          void admin('GET', `${base}/api/widgets`).catch(() => undefined);
          const res = await http('GET', `${base}/health`);
          expect(res.status, res.text).to.equal(503);
          expect(res.body?.bus).to.deep.include({ state: 'blocked' });
        },
        20_000,
        200,
      );
      const blockedAt = Date.now();
      const health = await http('GET', `${base}/health`);
      expect(health.body).to.include({ status: 'unavailable', code: 'SERVICE_UNAVAILABLE' });
      expect(health.body.bus.reason, 'names the alarm').to.match(/memory/);
      expect(health.body.message).to.match(/blocked.*memory/);
      expect(health.headers.get('retry-after')).to.match(/^\d+$/);
      expect(sample(await scrape(metricsUrl), 'contracts_gateway_bus_connection_state', { state: 'blocked' })).to.equal(
        1,
      );
      const lines = gw!.output().match(/bus: blocked \(127\.0\.0\.1:\d+: [^)]*memory[^)]*\)/g) ?? [];
      expect(lines, gw!.output()).to.have.length(1);

      // Refused at once, not left to hang until the deadline.
      const answers: Array<{ status: number; ms: number; code?: string; retryAfter: string | null }> = [];
      while (Date.now() - blockedAt < BLOCKED_MS) {
        const sent = Date.now();
        const res = await admin('GET', `${base}/api/widgets`);
        answers.push({
          status: res.status,
          ms: Date.now() - sent,
          code: res.body?.code,
          retryAfter: res.headers.get('retry-after'),
        });
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(answers.length).to.be.above(5);
      for (const a of answers) {
        expect(a, 'refused at once, to retry').to.deep.include({ status: 503, code: 'SERVICE_UNAVAILABLE' });
        expect(a.retryAfter).to.match(/^\d+$/);
        expect(a.ms).to.be.below(1_000);
      }
      // Over two leases without a renewal heard: the instance is held all the same.
      expect((await http('GET', `${base}/health`)).body, 'the instance is held').to.include({ services: 1 });
    } finally {
      await c.ctl(node, ['set_vm_memory_high_watermark', '0.4']);
    }
    const clearedAt = Date.now();
    await eventually(
      async () => {
        expect((await http('GET', `${base}/health`)).status).to.equal(200);
        expect((await admin('GET', `${base}/api/widgets`)).status).to.equal(200);
      },
      5_000,
      100,
    );
    console.log(`      memory alarm cleared: /health and the route 200 again after ${Date.now() - clearedAt} ms`);
    expect(sample(await scrape(metricsUrl), 'contracts_gateway_bus_connection_state', { state: 'up' })).to.equal(1);
  });
});
