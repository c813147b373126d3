import { expect } from 'chai';
import { startGateway, eventually, type GatewayProcess } from '../support/gateway-process';
import { AMQP_URL } from '../support/env';
import { httpAs } from '../support/http';
import { floodAnnouncements, probeLoop } from '../support/flood';

const admin = httpAs(['admin:all', 'users:read']);

/**
 * A bounded flood (2 s of 2,000 changing announcements per second) through the real RabbitMQ: every probe of
 * GET /api/users is answered 200 throughout, and the last announcement is served afterwards. The latency targets
 * (median < 50 ms, none > 1 s, caught up within 5 s of a 10 s flood) are measured by `npm run bench:flood`.
 */
describe('a flood of changing announcements', function () {
  this.timeout(60_000);
  let gw: GatewayProcess;

  before(async () => {
    gw = await startGateway({ BUS_URL: AMQP_URL });
  });
  after(async () => {
    await gw?.stop();
  });

  it('keeps answering GET /api/users and serves the final state afterwards', async () => {
    const probes = probeLoop(async () => (await admin('GET', `${gw.baseUrl}/api/users`)).status);
    const flood = await floodAnnouncements({ url: AMQP_URL, prefix: gw.prefix, rate: 2000, durationMs: 2000 });
    const stats = await probes.stop();
    expect(flood.sent).to.be.above(3000);
    expect(stats.count).to.be.above(5);
    expect(stats.failures, JSON.stringify(stats)).to.equal(0);
    await eventually(async () => {
      const listing = await admin('GET', `${gw.baseUrl}/api/discovery/contracts`);
      const last = (listing.body.contracts as Array<{ messageType: string; endpoints: Array<{ path: string }> }>).find(
        (c) => c.messageType === flood.lastMessageType,
      );
      expect(last, `${flood.lastMessageType} not served yet`).to.not.equal(undefined);
      expect(last!.endpoints.map((e) => e.path)).to.include(
        `/api/${flood.lastMessageType.replace(/Command$/, '').toLowerCase()}`,
      );
    }, 15_000);
  });
});
