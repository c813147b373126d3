import { expect } from 'chai';
import * as amqp from 'amqplib';
import { AmqpTransport } from '../../plugin/bus/amqp';
import { WORK_QUEUE_EXPIRES_MS, PRECONDITION_FAILED } from '../../plugin/bus/amqp/wire';
import type { Logger } from '../../plugin/logger';
import type { RequestMessage } from '../../plugin/bus/transport';
import { deleteBusTopology, deleteWorkQueues } from '../support/broker';
import { AMQP_URL, uniquePrefix } from '../support/env';
import { TcpProxy, viaPort } from '../support/tcp-proxy';
import { deferred, eventually, rejection, requestFor } from './conformance';

/**
 * What a process does with several brokers in BUS_URL, with quorum work queues and with keyed requests, on the
 * machine's one RabbitMQ: two TCP proxies in front of it stand for two nodes (the three-node cluster itself is
 * test/e2e/cluster.test.ts).
 */
describe('AMQP client of a cluster: several addresses, quorum work queues, confirmed keyed requests (RabbitMQ)', function () {
  this.timeout(30_000);
  let prefix: string;
  const transports: AmqpTransport[] = [];
  const proxies: TcpProxy[] = [];
  const lines: string[] = [];
  const logger: Logger = {
    debug: () => undefined,
    info: (m) => lines.push(m),
    warn: (m) => lines.push(m),
    error: (m) => lines.push(m),
  };
  let stuck = deferred<void>();

  const transport = async (url: string, opts: { queueType?: 'classic' | 'quorum' } = {}): Promise<AmqpTransport> => {
    const t = new AmqpTransport(url, { prefix, logger, ...opts });
    transports.push(t);
    await t.start();
    return t;
  };
  const proxy = async (): Promise<{ proxy: TcpProxy; url: string }> => {
    const broker = new URL(AMQP_URL);
    const p = new TcpProxy({ host: broker.hostname, port: Number(broker.port || 5672) });
    proxies.push(p);
    return { proxy: p, url: viaPort(AMQP_URL, await p.listen()) };
  };

  beforeEach(() => {
    prefix = uniquePrefix('cl');
    lines.length = 0;
  });
  afterEach(async () => {
    stuck.resolve();
    stuck = deferred<void>();
    for (const t of transports.splice(0)) await t.close();
    for (const p of proxies.splice(0)) await p.close();
    await deleteWorkQueues(AMQP_URL, prefix, ['svc', 'full']);
    await deleteBusTopology(AMQP_URL, prefix);
  });

  it('moves to the next address when its node is lost, says which node it is on, and logs no password', async () => {
    const a = await proxy();
    const b = await proxy();
    const gateway = await transport(AMQP_URL);
    const service = await transport(`${a.url},${b.url}`);
    await service.serve('svc', async (m) => ({ ok: true, result: m.input }));
    const first = service.node();
    expect([a.url, b.url].map((u) => new URL(u).host)).to.include(first);
    expect(await gateway.request(requestFor('svc', { n: 1 }), 5000)).to.deep.equal({ ok: true, result: { n: 1 } });
    // Its node goes away for good: the one it is on refuses from now on.
    const [on] = [a, b].filter((p) => new URL(p.url).host === first);
    on.proxy.refusing = true;
    on.proxy.killAll();
    await eventually(() => service.state() === 'up' && service.node() !== first, 10_000, 'service on the other node');
    // It declared its work queue and consumer again there.
    await eventually(
      async () => (await gateway.request(requestFor('svc', { n: 2 }), 5000).catch(() => null)) !== null,
      10_000,
      'served again',
    );
    expect(await gateway.request(requestFor('svc', { n: 3 }), 5000)).to.deep.equal({ ok: true, result: { n: 3 } });
    expect(lines.join('\n')).to.contain(`connection to ${first} lost`);
    expect(lines.join('\n')).not.to.contain('guest:guest');
  });

  it('declares a quorum work queue with BUS_QUEUE_TYPE=quorum and hands the delivery count to the handler', async () => {
    const gateway = await transport(AMQP_URL);
    const { proxy: p, url } = await proxy();
    const doomed = await transport(url, { queueType: 'quorum' });
    const entered = deferred<void>();
    await doomed.serve('svc', async () => {
      entered.resolve();
      await stuck.promise;
      return { ok: true, result: 'too late' };
    });
    const admin = await amqp.connect(AMQP_URL);
    try {
      const ch = await admin.createChannel();
      ch.on('error', () => undefined);
      // A declaration with other arguments is refused: the queue is exactly this quorum queue.
      await ch.assertQueue(`${prefix}.svc.svc`, {
        durable: true,
        arguments: { 'x-queue-type': 'quorum', 'x-expires': WORK_QUEUE_EXPIRES_MS, 'x-delivery-limit': 5 },
      });
      const classic = await ch
        .assertQueue(`${prefix}.svc.svc`, { durable: false, arguments: { 'x-expires': WORK_QUEUE_EXPIRES_MS } })
        .catch((err: { code?: number }) => err.code);
      expect(classic).to.equal(PRECONDITION_FAILED);
    } finally {
      await admin.close().catch(() => undefined);
    }
    const seen: RequestMessage[] = [];
    const answer = gateway.request(requestFor('svc', { n: 1 }), 20_000);
    await entered.promise;
    const survivor = await transport(AMQP_URL, { queueType: 'quorum' });
    await survivor.serve('svc', async (m) => {
      seen.push(m);
      return { ok: true, result: { deliveryCount: m.deliveryCount } };
    });
    p.refusing = true;
    p.killAll();
    expect(await answer).to.deep.equal({ ok: true, result: { deliveryCount: 1 } });
    expect(seen[0].redelivered).to.equal(true);
  });

  it('the last instance to stop deletes its quorum queue (503 at once for the next request), not while another consumes', async () => {
    const gateway = await transport(AMQP_URL);
    const one = await transport(AMQP_URL, { queueType: 'quorum' });
    const two = await transport(AMQP_URL, { queueType: 'quorum' });
    const first = await one.serve('svc', async () => ({ ok: true, result: 1 }));
    const second = await two.serve('svc', async () => ({ ok: true, result: 2 }));
    await first.close();
    expect(one.state()).to.equal('up'); // an if-unused delete on a quorum queue would have cost the connection
    expect((await gateway.request(requestFor('svc'), 5000)).ok).to.equal(true);
    await second.close();
    const err = await rejection(gateway.request(requestFor('svc'), 5000));
    expect(err.status).to.equal(503);
  });

  it('an instance on classic queues meets a quorum one: consumes it as it is, and stopping last deletes it without losing its connection', async () => {
    const gateway = await transport(AMQP_URL);
    const quorum = await transport(AMQP_URL, { queueType: 'quorum' });
    const classic = await transport(AMQP_URL);
    const first = await quorum.serve('svc', async () => ({ ok: true, result: 'quorum' }));
    const second = await classic.serve('svc', async () => ({ ok: true, result: 'classic' }));
    expect(lines.join('\n')).to.contain('exists with other arguments');
    await first.close();
    expect(await gateway.request(requestFor('svc'), 5000)).to.deep.equal({ ok: true, result: 'classic' });
    await second.close();
    expect(classic.state(), 'an if-unused delete of the quorum queue would have closed the connection').to.equal('up');
    expect((await rejection(gateway.request(requestFor('svc'), 5000))).status).to.equal(503);
  });

  it('answers a request 503 at once when the broker does not take it (nack), keyed or not', async () => {
    const gateway = await transport(AMQP_URL);
    // A queue for the service that takes nothing: the broker nacks every message routed to it.
    const admin = await amqp.connect(AMQP_URL);
    try {
      const ch = await admin.createChannel();
      await ch.assertExchange(`${prefix}.requests`, 'topic', { durable: true });
      await ch.assertQueue(`${prefix}.svc.full`, {
        durable: false,
        arguments: { 'x-max-length': 0, 'x-overflow': 'reject-publish', 'x-expires': 60_000 },
      });
      await ch.bindQueue(`${prefix}.svc.full`, `${prefix}.requests`, 'full');
      await ch.close();
    } finally {
      await admin.close().catch(() => undefined);
    }
    const keyed = requestFor('full', { n: 1 });
    keyed.headers.idempotencyKey = 'k-1';
    const started = Date.now();
    const err = await rejection(gateway.request(keyed, 10_000));
    expect(err.status).to.equal(503);
    expect(err.message).to.equal('The message bus did not accept the message');
    expect(Date.now() - started).to.be.below(5000);
    // Unkeyed requests are confirmed too: nothing was taken, so 503 now rather than 504 at the deadline.
    const unkeyedAt = Date.now();
    const unkeyed = await rejection(gateway.request(requestFor('full', { n: 2 }), 10_000));
    expect(unkeyed.status).to.equal(503);
    expect(unkeyed.message).to.equal('The message bus did not accept the message');
    expect(Date.now() - unkeyedAt).to.be.below(5000);
  });
});
