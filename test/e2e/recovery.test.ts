import { expect } from 'chai';
import { startGateway, eventually, type GatewayProcess } from '../support/gateway-process';
import { httpAs } from '../support/http';

/** Authenticated as an administrator: what is tested here lies behind authentication. */
const http = httpAs(['admin:all']);
import { AMQP_URL } from '../support/env';
import { TcpProxy, viaPort } from '../support/tcp-proxy';

/**
 * A broker restart as the gateway sees it: every connection to RabbitMQ is cut and new ones are refused for a
 * while. Requests meanwhile fail fast with the error body; afterwards the same gateway process serves again.
 */
describe('gateway across a broker outage', function () {
  this.timeout(30000);
  let gw: GatewayProcess;
  let proxy: TcpProxy;

  before(async () => {
    const broker = new URL(AMQP_URL);
    proxy = new TcpProxy({ host: broker.hostname, port: Number(broker.port || 5672) });
    const port = await proxy.listen();
    gw = await startGateway({ BUS_URL: viaPort(AMQP_URL, port) });
  });
  after(async () => {
    await gw?.stop();
    await proxy?.close();
  });

  it('answers 502/503 at once while the broker is away and recovers without a restart', async () => {
    expect((await http('GET', `${gw.baseUrl}/api/users`)).status).to.equal(200);

    proxy.refusing = true;
    proxy.killAll();
    const started = Date.now();
    const down = await http('GET', `${gw.baseUrl}/api/users`);
    expect(Date.now() - started).to.be.below(2000);
    expect([502, 503]).to.include(down.status);
    expect(down.body.code).to.equal('SERVICE_UNAVAILABLE');
    expect(down.body.correlationId).to.be.a('string');
    if (down.status === 503) expect(down.headers.get('retry-after')).to.match(/^\d+$/);

    proxy.refusing = false;
    const back = await eventually(
      async () => {
        const res = await http('GET', `${gw.baseUrl}/api/users`);
        expect(res.status, res.text).to.equal(200);
        return res;
      },
      20000,
      200,
    );
    expect(back.body).to.have.property('users');
    const created = await http('POST', `${gw.baseUrl}/api/users`, { body: { email: 'after-outage@example.com' } });
    expect(created.status).to.equal(201);
  });
});
