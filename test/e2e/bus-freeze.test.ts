import { expect } from 'chai';
import { eventually, startGateway, type GatewayProcess } from '../support/gateway-process';
import { http, httpAs } from '../support/http';
import { AMQP_URL, uniquePrefix } from '../support/env';
import { deleteBusTopology } from '../support/broker';
import { TcpProxy, viaPort } from '../support/tcp-proxy';
import { startListService, stopListService } from '../support/list-service';

const admin = httpAs(['admin:all'], 'bus-freeze');
/** The SDK's default lease: re-announced every 5 s, so it runs out 10–15 s after the last renewal got through. */
const LEASE_MS = 15_000;
/** A whole heartbeat (5 s) without a frame, plus the 500 ms poll and a loaded machine's slack. */
const NOTICED_MS = 8_000;
/** How soon after the freeze reads must be answered 200 again (issue: within 20 s). */
const BACK_MS = 20_000;

interface Probe {
  at: number;
  status: number;
  code?: string;
  retryAfter: string | null;
}

/** GET `url` every 100 ms until `stop()` is called; the answers, with their time. */
function probe(url: string): { answers: Probe[]; stop: () => Promise<void> } {
  const answers: Probe[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const res = await admin('GET', url).catch(() => undefined);
      if (res)
        answers.push({
          at: Date.now(),
          status: res.status,
          code: res.body?.code,
          retryAfter: res.headers.get('retry-after'),
        });
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  return {
    answers,
    stop: async () => {
      running = false;
      await loop;
    },
  };
}

/** Two proxies in front of the machine's broker: BUS_URL's two "nodes", one of which the test freezes. */
async function proxyPair(): Promise<{ proxies: TcpProxy[]; busUrl: string; ports: number[] }> {
  const broker = new URL(AMQP_URL);
  const proxies = [0, 1].map(() => new TcpProxy({ host: broker.hostname, port: Number(broker.port || 5672) }));
  const ports = [await proxies[0]!.listen(), await proxies[1]!.listen()];
  return { proxies, ports, busUrl: ports.map((p) => viaPort(AMQP_URL, p)).join(',') };
}

/**
 * A node that stops answering without closing its sockets (stalled proxies stand for a frozen VM or a partition):
 * the gateway and the SDK notice it within a heartbeat and move to the other node of BUS_URL, and no route is
 * dropped meanwhile, so nothing answers 404.
 */
describe('a bus node that stops answering: noticed, routed around, never a 404', function () {
  this.timeout(180_000);
  const prefix = uniquePrefix('freeze');
  const all: TcpProxy[] = [];
  let gatewayPair: Awaited<ReturnType<typeof proxyPair>>;
  let servicePair: Awaited<ReturnType<typeof proxyPair>>;
  let gw: GatewayProcess | undefined;
  const services: Array<Awaited<ReturnType<typeof startListService>>> = [];

  before(async () => {
    gatewayPair = await proxyPair();
    servicePair = await proxyPair();
    all.push(...gatewayPair.proxies, ...servicePair.proxies);
    // widgets is on the machine's broker directly: only the gateway's node freezes in the first case.
    for (const [url, name] of [
      [AMQP_URL, 'widgets'],
      [servicePair.busUrl, 'gadgets'],
    ] as const)
      services.push(await startListService(url, prefix, name));
    gw = await startGateway({ BUS_URL: gatewayPair.busUrl, BUS_PREFIX: prefix, START_REFERENCE_SERVICES: 'false' });
    for (const route of ['widgets', 'gadgets'])
      await eventually(async () => {
        const res = await admin('GET', `${gw!.baseUrl}/api/${route}`);
        expect(res.status, res.text).to.equal(200);
      }, 20_000);
  });

  after(async () => {
    for (const p of all) p.resume();
    for (const s of services) await stopListService(s);
    await gw?.stop().catch(() => undefined);
    for (const p of all) await p.close();
    await deleteBusTopology(AMQP_URL, prefix).catch(() => undefined);
  });

  it("the gateway's node freezes, the other is away for longer than a lease: 503 meanwhile, the routes kept, no 404", async () => {
    const base = gw!.baseUrl;
    const health = await http('GET', `${base}/health`);
    const at = gatewayPair.ports.findIndex((p) => health.body?.bus?.node === `127.0.0.1:${p}`);
    expect(at, health.text).to.be.at.least(0);
    const [frozen, other] = [gatewayPair.proxies[at]!, gatewayPair.proxies[1 - at]!];
    const probes = probe(`${base}/api/widgets`);
    try {
      other.refusing = true;
      const frozeAt = Date.now();
      frozen.stall();
      await eventually(async () => expect((await http('GET', `${base}/health`)).status).to.equal(503), 15_000, 100);
      const noticedMs = Date.now() - frozeAt;
      // Longer than a lease with no node to go to: the instances must still be held.
      await new Promise((r) => setTimeout(r, LEASE_MS + 2_000 - noticedMs));
      const down = await http('GET', `${base}/health`);
      expect(down.status).to.equal(503);
      expect(down.body, 'the instances are held while the gateway cannot hear them').to.include({ services: 2 });
      expect(down.headers.get('retry-after')).to.match(/^\d+$/);
      other.refusing = false;
      const freedAt = Date.now();
      await eventually(
        async () => expect((await admin('GET', `${base}/api/widgets`)).status).to.equal(200),
        BACK_MS,
        100,
      );
      const backMs = Date.now() - freedAt;
      await probes.stop();
      console.log(
        `      gateway node frozen: /health 503 after ${noticedMs} ms; reads 200 again ${backMs} ms after the other node took connections`,
      );
      expect(noticedMs, 'noticed within a heartbeat and a poll').to.be.below(NOTICED_MS);
      const during = probes.answers.filter((a) => a.at >= frozeAt);
      expect(
        during.filter((a) => a.status === 404),
        'no 404',
      ).to.deep.equal([]);
      // A read in flight when the connection was dropped: 502, its reply queue went with it (outcome unknown, as
      // for any unkeyed request); every other one is refused at once with Retry-After.
      const inFlight = during.filter((a) => a.status === 502);
      expect(inFlight.length, 'only the reads in flight at the drop').to.be.at.most(1);
      for (const a of during.filter((x) => x.status !== 200 && x.status !== 502)) {
        expect(a, 'refused, to retry').to.deep.include({ status: 503, code: 'SERVICE_UNAVAILABLE' });
        expect(a.retryAfter).to.match(/^\d+$/);
      }
      const now = (await http('GET', `${base}/health`)).body?.bus?.node;
      expect(now, 'on the other node').to.equal(`127.0.0.1:${gatewayPair.ports[1 - at]}`);
      expect(gw!.output()).to.match(/bus: no frame from 127\.0\.0\.1:\d+ for \d+ ms: dropping the connection/);
    } finally {
      await probes.stop();
      frozen.resume();
      other.refusing = false;
    }
  });

  it("a service's node freezes: it moves to the other node and re-announces; its route answers 200 again, never 404", async () => {
    const base = gw!.baseUrl;
    const transport = services[1]!.transport;
    const at = servicePair.ports.findIndex((p) => transport.node() === `127.0.0.1:${p}`);
    expect(at, String(transport.node())).to.be.at.least(0);
    const frozen = servicePair.proxies[at]!;
    const probes = probe(`${base}/api/gadgets`);
    try {
      const frozeAt = Date.now();
      frozen.stall();
      await eventually(
        async () => expect(transport.node()).to.equal(`127.0.0.1:${servicePair.ports[1 - at]}`),
        15_000,
        100,
      );
      const movedMs = Date.now() - frozeAt;
      // Past the moment the lease would have run out without the re-announcement.
      await new Promise((r) => setTimeout(r, Math.max(0, LEASE_MS + 2_000 - movedMs)));
      await eventually(
        async () => expect((await admin('GET', `${base}/api/gadgets`)).status).to.equal(200),
        BACK_MS,
        100,
      );
      await probes.stop();
      const during = probes.answers.filter((a) => a.at >= frozeAt);
      const lastNotOk = [...during].reverse().find((a) => a.status !== 200);
      console.log(
        `      service node frozen: moved after ${movedMs} ms; last non-200 read ${lastNotOk ? lastNotOk.at - frozeAt : 0} ms after the freeze`,
      );
      expect(movedMs, 'noticed within a heartbeat and a poll').to.be.below(NOTICED_MS);
      expect(
        during.filter((a) => a.status === 404),
        'no 404',
      ).to.deep.equal([]);
      expect(lastNotOk ? lastNotOk.at - frozeAt : 0, 'reads 200 again within 20 s').to.be.below(BACK_MS);
    } finally {
      await probes.stop();
      frozen.resume();
    }
  });
});
