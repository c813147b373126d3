import { expect } from 'chai';
import * as amqp from 'amqplib';
import { AmqpTransport } from '../../plugin/bus/amqp';
import { WORK_QUEUE_EXPIRES_MS } from '../../plugin/bus/amqp/wire';
import { silentLogger, type Logger } from '../../plugin/logger';
import type { RequestMessage } from '../../plugin/bus/transport';
import { deleteBusTopology, deleteWorkQueues } from '../support/broker';
import { AMQP_URL, uniquePrefix } from '../support/env';
import { TcpProxy, viaPort } from '../support/tcp-proxy';
import { deferred, eventually, requestFor } from './conformance';

/**
 * The service work queue outlives the consumers that hold its requests: what a consumer held when its connection
 * dropped is redelivered (marked so) to another instance or to the same one once it is back.
 */
describe('AMQP work queue: redelivery of held requests (RabbitMQ)', function () {
  this.timeout(30_000);
  let prefix: string;
  const transports: AmqpTransport[] = [];
  const proxies: TcpProxy[] = [];
  let admin: amqp.ChannelModel;
  /** Handlers that must not answer wait on this; released before the transports close (which waits for them). */
  let stuck = deferred<void>();

  const transport = async (url = AMQP_URL, logger: Logger = silentLogger): Promise<AmqpTransport> => {
    const t = new AmqpTransport(url, { prefix, logger });
    transports.push(t);
    await t.start();
    return t;
  };
  const proxied = async (): Promise<{ proxy: TcpProxy; url: string }> => {
    const broker = new URL(AMQP_URL);
    const proxy = new TcpProxy({ host: broker.hostname, port: Number(broker.port || 5672) });
    proxies.push(proxy);
    return { proxy, url: viaPort(AMQP_URL, await proxy.listen()) };
  };

  beforeEach(async () => {
    prefix = uniquePrefix('wq');
    admin = await amqp.connect(AMQP_URL);
    admin.on('error', () => undefined);
  });
  afterEach(async () => {
    stuck.resolve();
    stuck = deferred<void>();
    for (const t of transports.splice(0)) await t.close();
    for (const p of proxies.splice(0)) await p.close();
    await admin.close();
    await deleteWorkQueues(AMQP_URL, prefix, ['held', 'legacy']);
    await deleteBusTopology(AMQP_URL, prefix);
  });

  it('declares the work queue not auto-delete, expiring after its last consumer left', async () => {
    const service = await transport();
    await service.serve('held', async () => ({ ok: true }));
    const ch = await admin.createChannel();
    ch.on('error', () => undefined);
    // A declaration with other arguments is refused by the broker: the queue has exactly these.
    await ch.assertQueue(`${prefix}.svc.held`, {
      durable: false,
      autoDelete: false,
      arguments: { 'x-expires': WORK_QUEUE_EXPIRES_MS },
    });
    await ch.close();
  });

  it('a request held by an instance whose connection drops is redelivered to the other instance and answered', async () => {
    const gateway = await transport();
    const { proxy, url } = await proxied();
    const doomed = await transport(url);
    const entered = deferred<void>();
    await doomed.serve('held', async () => {
      entered.resolve();
      await stuck.promise; // does not answer: its instance is about to vanish
      return { ok: true, result: 'too late' };
    });
    const seen: RequestMessage[] = [];
    const survivor = await transport();
    // Joins once the doomed instance holds the request, so the request cannot go to the survivor first.
    const answer = gateway.request(requestFor('held', { n: 1 }), 20_000);
    await entered.promise;
    await survivor.serve('held', async (m) => {
      seen.push(m);
      return { ok: true, result: { redelivered: m.redelivered === true } };
    });
    proxy.refusing = true;
    proxy.killAll();
    expect(await answer).to.deep.equal({ ok: true, result: { redelivered: true } });
    expect(seen[0]?.input).to.deep.equal({ n: 1 });
  });

  it('a lone instance that reconnects answers what it held with the run it had started, and what was sent meanwhile', async () => {
    const gateway = await transport();
    const { proxy, url } = await proxied();
    const service = await transport(url);
    const entered = deferred<void>();
    const release = deferred<void>();
    const runs: unknown[] = [];
    await service.serve('held', async (m) => {
      runs.push(m.input.n);
      if (m.input.n === 1) {
        entered.resolve();
        await release.promise; // still running when its channel dies
      }
      return { ok: true, result: { n: m.input.n, redelivered: m.redelivered === true } };
    });
    const held = gateway.request(requestFor('held', { n: 1 }), 20_000);
    await entered.promise;
    proxy.refusing = true;
    proxy.killAll();
    await eventually(() => service.state() === 'down', 5000, 'service down');
    const meanwhile = gateway.request(requestFor('held', { n: 2 }), 20_000);
    proxy.refusing = false;
    expect(await meanwhile).to.deep.equal({ ok: true, result: { n: 2, redelivered: false } });
    release.resolve();
    // The redelivered copy is answered with the first run's reply: the handler did not run a second time.
    expect(await held).to.deep.equal({ ok: true, result: { n: 1, redelivered: false } });
    expect(runs).to.deep.equal([1, 2]);
  });

  it('the last instance to stop deletes the queue at once (503 for new requests) while its handler in flight still replies', async () => {
    const gateway = await transport();
    const service = await transport();
    const entered = deferred<void>();
    const release = deferred<void>();
    const subscription = await service.serve('held', async () => {
      entered.resolve();
      await release.promise;
      return { ok: true, result: 'finished' };
    });
    const inFlight = gateway.request(requestFor('held'), 20_000);
    await entered.promise;
    const closing = subscription.close();
    await eventually(
      async () => {
        // One sent before the queue went waits for its deadline (504): short deadlines, until one comes back 503.
        const err = await gateway.request(requestFor('held'), 500).then(
          () => undefined,
          (e: { status?: number }) => e,
        );
        return err?.status === 503;
      },
      5000,
      'a 503 for a new request while the handler still runs',
    );
    release.resolve();
    expect(await inFlight).to.deep.equal({ ok: true, result: 'finished' });
    await closing;
  });

  it('consumes a queue an older instance declared auto-delete (rolling upgrade) instead of failing', async () => {
    const old = await admin.createChannel();
    const queue = `${prefix}.svc.legacy`;
    await old.assertExchange(`${prefix}.requests`, 'topic', { durable: true });
    await old.assertQueue(queue, { durable: false, autoDelete: true });
    await old.bindQueue(queue, `${prefix}.requests`, 'legacy');
    await old.prefetch(1);
    await old.consume(queue, () => undefined); // an old instance that never answers: prefetch 1 keeps it to one request
    const warnings: string[] = [];
    const service = await transport(AMQP_URL, { ...silentLogger, warn: (m) => warnings.push(m) });
    await service.serve('legacy', async () => ({ ok: true, result: 'new' }));
    expect(warnings.join('\n')).to.match(/exists with other arguments/);
    const gateway = await transport();
    const replies = await Promise.all(
      [1, 2, 3].map(() => gateway.request(requestFor('legacy'), 3000).catch(() => undefined)),
    );
    expect(replies.filter((r) => r?.ok === true).length, 'the new instance served from the old queue').to.be.at.least(
      1,
    );
    await old.close();
  });
});
