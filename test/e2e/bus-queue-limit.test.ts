import { expect } from 'chai';
import { eventually, startGateway, type GatewayProcess } from '../support/gateway-process';
import { http, httpAs } from '../support/http';
import { uniquePrefix } from '../support/env';
import { rabbitmqctl } from '../support/broker-users';
import { startListService, stopListService } from '../support/list-service';

const admin = httpAs(['admin:all'], 'queue-limit');
/** The discovery grace: the default, time for a route announced to reach the host's config. */
const GRACE_MS = 5_000;
/** Longer than the grace: the answer must not turn into a 404 with time. */
const HELD_MS = 6_500;

/**
 * A gateway that starts while its vhost's queue limit is reached (another user of the vhost, an attacker with one
 * service's credential, holds every queue it allows): the broker refuses its announcement listener, so it cannot
 * learn a single route. It must say so — every route 503 with Retry-After, never a 404 a client takes as final, and
 * `/health` 503 naming why — for as long as the limit holds, and serve once it lifts. On the real RabbitMQ, in a
 * vhost of the test's own.
 */
describe('a gateway starting at the vhost queue limit: 503 and /health say why, never 404', function () {
  this.timeout(90_000);
  const vhost = uniquePrefix('qlimit');
  const prefix = uniquePrefix('qlim');
  const url = `amqp://guest:guest@127.0.0.1:5672/${encodeURIComponent(vhost)}`;
  let widgets: Awaited<ReturnType<typeof startListService>> | undefined;
  let gadgets: Awaited<ReturnType<typeof startListService>> | undefined;
  let gw: GatewayProcess | undefined;

  before(async () => {
    await rabbitmqctl(['add_vhost', vhost]);
    await rabbitmqctl(['set_permissions', '-p', vhost, 'guest', '.*', '.*', '.*']);
  });

  after(async () => {
    await gw?.stop().catch(() => undefined);
    await stopListService(widgets);
    await stopListService(gadgets);
    await rabbitmqctl(['delete_vhost', vhost]).catch(() => undefined);
  });

  it('answers 503 SERVICE_UNAVAILABLE on every route and /health 503 while the limit holds; serves after', async () => {
    // A long lease: the service renews every 20 s, so only the gateway asking again brings the route back sooner.
    widgets = await startListService(url, prefix, 'widgets', 60_000);
    // The limit is the queues there are now: the service keeps its own, the gateway gets none.
    const queues = (await rabbitmqctl(['list_queues', '-p', vhost, '-q', '--no-table-headers', 'name']))
      .split('\n')
      .filter((line) => line.trim() !== '').length;
    expect(queues, 'the service holds queues of its own').to.be.above(0);
    await rabbitmqctl(['set_vhost_limits', '-p', vhost, JSON.stringify({ 'max-queues': queues })]);

    gw = await startGateway({
      BUS_URL: url,
      BUS_PREFIX: prefix,
      START_REFERENCE_SERVICES: 'false',
      DISCOVERY_GRACE_MS: String(GRACE_MS),
    });
    const base = gw.baseUrl;
    await eventually(async () => {
      const health = await http('GET', `${base}/health`);
      expect(health.body?.bus, health.text).to.deep.include({ state: 'up' });
    }, 20_000);

    const until = Date.now() + HELD_MS;
    let asked = 0;
    while (Date.now() < until) {
      for (const path of ['/api/widgets', '/api/nothing-here']) {
        const res = await admin('GET', `${base}${path}`);
        expect(res.status, `${path}: ${res.text}`).to.equal(503);
        expect(res.body).to.include({ code: 'SERVICE_UNAVAILABLE' });
        expect(res.body.message).to.match(/cannot hear the services' announcements/);
        expect(res.headers.get('retry-after')).to.match(/^\d+$/);
        asked += 1;
      }
      const health = await http('GET', `${base}/health`);
      expect(health.status, health.text).to.equal(503);
      expect(health.body).to.include({ status: 'unavailable', code: 'SERVICE_UNAVAILABLE', contracts: 0 });
      expect(health.body.bus).to.deep.include({ state: 'up' });
      expect(health.body.announcements).to.deep.equal({
        state: 'not heard',
        reason:
          "announcement listener: the broker refused it: a limit it enforces is reached (such as the vhost's queue limit)",
      });
      expect(health.text, 'no broker text').not.to.match(/queue limit in vhost|PRECONDITION|amqp:\/\//);
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(asked).to.be.above(4);

    await rabbitmqctl(['set_vhost_limits', '-p', vhost, '{"max-queues": -1}']);
    const lifted = Date.now();
    // Until it is served: 503 each time, never a 404 (the grace starts when the gateway hears, not while deaf).
    const before: number[] = [];
    for (;;) {
      const res = await admin('GET', `${base}/api/widgets`);
      if (res.status === 200) break;
      before.push(res.status);
      expect(Date.now() - lifted, 'served within 30 s').to.be.below(30_000);
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(
      before.filter((s) => s !== 503),
      'answers before it was served',
    ).to.deep.equal([]);
    const servedAfterMs = Date.now() - lifted;
    const health = await http('GET', `${base}/health`);
    expect(health.status, health.text).to.equal(200);
    expect(health.body).to.deep.include({ status: 'ok', announcements: { state: 'heard' } });
    // Asked again once heard, not left to the service's next renewal (20 s away at most).
    expect(servedAfterMs, 'served soon after the limit lifts').to.be.below(10_000);
    const missing = await admin('GET', `${base}/api/nothing-here`);
    await eventually(async () => {
      const res = await admin('GET', `${base}/api/nothing-here`);
      expect(res.status, res.text).to.equal(404);
    }, 10_000);
    expect([503, 404]).to.include(missing.status);
  });

  it('with routes known, loses its listener at the limit: /health 200 degraded saying why, the routes still served', async () => {
    const base = gw!.baseUrl;
    // The gateway's announcement queue: the one bound to the discovery exchange for every announcement.
    const bindings = await rabbitmqctl([
      'list_bindings',
      '-p',
      vhost,
      '-q',
      '--no-table-headers',
      'destination_name',
      'routing_key',
    ]);
    const listener = bindings
      .split('\n')
      .map((line) => line.trim().split(/\s+/))
      .find(([queue, key]) => queue?.startsWith(`${prefix}.announce.`) && key === 'announce.#')?.[0];
    expect(listener, bindings).to.be.a('string');
    const queues = (await rabbitmqctl(['list_queues', '-p', vhost, '-q', '--no-table-headers', 'name']))
      .split('\n')
      .filter((line) => line.trim() !== '').length;
    await rabbitmqctl(['set_vhost_limits', '-p', vhost, JSON.stringify({ 'max-queues': queues - 1 })]);
    await rabbitmqctl(['delete_queue', '-p', vhost, listener!]);

    await eventually(async () => {
      const health = await http('GET', `${base}/health`);
      expect(health.status, health.text).to.equal(200);
      expect(health.body).to.deep.include({ status: 'degraded' });
      expect(health.body.announcements).to.deep.include({ state: 'not heard' });
      expect(health.body.announcements.reason).to.match(/limit it enforces is reached/);
      expect(health.body.contracts).to.be.above(0);
    }, 20_000);
    for (let i = 0; i < 5; i += 1) {
      const res = await admin('GET', `${base}/api/widgets`);
      expect(res.status, res.text).to.equal(200);
    }

    await rabbitmqctl(['set_vhost_limits', '-p', vhost, '{"max-queues": -1}']);
    await eventually(async () => {
      const health = await http('GET', `${base}/health`);
      expect(health.status, health.text).to.equal(200);
      expect(health.body).to.deep.include({ status: 'ok', announcements: { state: 'heard' } });
    }, 20_000);
  });

  it('says in /health which of its channels the broker refuses (a reply consumer at the limit), 200 degraded', async () => {
    const base = gw!.baseUrl;
    // A service the gateway knows but has sent nothing yet: its reply consumer opens with the first request.
    gadgets = await startListService(url, prefix, 'gadgets', 60_000);
    await eventually(async () => {
      const health = await http('GET', `${base}/health`);
      expect(health.body?.services, health.text).to.equal(2);
    }, 20_000);
    const queues = (await rabbitmqctl(['list_queues', '-p', vhost, '-q', '--no-table-headers', 'name']))
      .split('\n')
      .filter((line) => line.trim() !== '').length;
    await rabbitmqctl(['set_vhost_limits', '-p', vhost, JSON.stringify({ 'max-queues': queues })]);
    try {
      const refused = await admin('GET', `${base}/api/gadgets`);
      expect(refused.status, refused.text).to.equal(503);
      expect(refused.headers.get('retry-after')).to.match(/^\d+$/);
      // The bus is up: the answer says it is this service's channel that is not open, not that the bus is down.
      expect(refused.body).to.include({
        code: 'SERVICE_UNAVAILABLE',
        message: "The message bus is up, but the gateway's channel for this service is not open yet",
      });
      await eventually(async () => {
        const health = await http('GET', `${base}/health`);
        expect(health.status, health.text).to.equal(200);
        expect(health.body).to.deep.include({ status: 'degraded', announcements: { state: 'heard' } });
        expect(health.body.bus.refused).to.deep.equal([
          "reply consumer of gadgets-service: the broker refused it: a limit it enforces is reached (such as the vhost's queue limit)",
        ]);
      }, 10_000);
      // The other service is served meanwhile.
      expect((await admin('GET', `${base}/api/widgets`)).status).to.equal(200);
    } finally {
      await rabbitmqctl(['set_vhost_limits', '-p', vhost, '{"max-queues": -1}']);
    }
    await eventually(
      async () => {
        const res = await admin('GET', `${base}/api/gadgets`);
        expect(res.status, res.text).to.equal(200);
        const health = await http('GET', `${base}/health`);
        expect(health.body).to.deep.include({ status: 'ok' });
        expect(health.body.bus).not.to.have.property('refused');
      },
      20_000,
      200,
    );
  });
});
