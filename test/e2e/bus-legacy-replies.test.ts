import { expect } from 'chai';
import * as amqp from 'amqplib';
import { AmqpTransport } from '../../plugin/bus/amqp';
import { GatewayError } from '../../plugin/errors/gateway-error';
import { silentLogger } from '../../plugin/logger';
import { deleteBusTopology, deleteWorkQueues } from '../support/broker';
import { createBrokerUsers, type BrokerUsers } from '../support/broker-users';
import { AMQP_URL, uniquePrefix } from '../support/env';

function request(service: string) {
  return {
    messageType: 'PingQuery',
    targetService: service,
    input: {},
    headers: { correlationId: 'c', requestId: 'r' },
  };
}

/**
 * The documented upgrade (operations.md, "Upgrading to the reply exchange") with real per-service broker users: under
 * definitions made with --legacy-replies a service of the previous version, replying through the default exchange,
 * is answered beside one replying through P.replies; once the definitions are re-imported without the switch, the
 * broker refuses the old kind of reply and only the new kind is answered.
 */
describe('replies of services from before P.replies, under --legacy-replies and after it (real broker users)', function () {
  this.timeout(60_000);
  const prefix = uniquePrefix('legacyreplies');
  const services = ['old-service', 'new-service'];
  let users: BrokerUsers | undefined;
  let gateway: AmqpTransport | undefined;
  let service: AmqpTransport | undefined;
  let old: amqp.ChannelModel | undefined;
  /** What the old service's channel was closed with, if the broker closed it. */
  let oldClosed = '';

  before(async () => {
    users = await createBrokerUsers(prefix, services, ['--legacy-replies']);
    gateway = new AmqpTransport(users.url('gateway'), {
      prefix,
      logger: silentLogger,
      replies: { replyUser: (s) => users!.user(s) },
    });
    await gateway.start();
    service = new AmqpTransport(users.url('new-service'), { prefix, logger: silentLogger });
    await service.start();
    await service.serve('new-service', async () => ({ ok: true, result: 'new' }));
    old = await startOldService();
  });

  /**
   * An older version's wire, by hand: replies through the default exchange, to the queue named by reply_to (before
   * P.replies), or through the shared P.replies (before P.replies.<service>).
   */
  async function startOldService(via: 'default' | 'replies' = 'default'): Promise<amqp.ChannelModel> {
    const conn = await amqp.connect(users!.url('old-service'));
    const ch = await conn.createChannel();
    ch.on('error', (err: Error) => (oldClosed = err.message));
    const queue = `${prefix}.svc.old-service`;
    await ch.assertQueue(queue, { durable: false, autoDelete: false, arguments: { 'x-expires': 15000 } });
    await ch.bindQueue(queue, `${prefix}.requests`, 'old-service');
    await ch.consume(queue, (msg) => {
      if (!msg) return;
      const reply = Buffer.from('{"ok":true,"result":"old"}');
      const props = { correlationId: msg.properties.correlationId, userId: users!.user('old-service') };
      if (via === 'default') ch.sendToQueue(msg.properties.replyTo, reply, props);
      else ch.publish(`${prefix}.replies`, msg.properties.replyTo, reply, props);
      ch.ack(msg);
    });
    return conn;
  }

  after(async () => {
    await old?.close().catch(() => undefined);
    await service?.close().catch(() => undefined);
    await gateway?.close().catch(() => undefined);
    await deleteWorkQueues(AMQP_URL, prefix, services).catch(() => undefined);
    await deleteBusTopology(AMQP_URL, prefix).catch(() => undefined);
    await users?.remove();
  });

  it('answers both kinds while the switch is in force, and only the new kind once it is gone', async () => {
    expect(await gateway!.request(request('old-service'), 5000)).to.deep.equal({ ok: true, result: 'old' });
    expect(await gateway!.request(request('new-service'), 5000)).to.deep.equal({ ok: true, result: 'new' });
    expect(oldClosed).to.equal('');

    // The same users, re-imported without --legacy-replies; services from before P.replies.<service> still run.
    await createBrokerUsers(prefix, services, ['--legacy-topology']);
    // RabbitMQ keeps what a channel was allowed before the re-import: the old service is restarted (new connection).
    await old!.close();
    old = await startOldService();
    const refused = await gateway!.request(request('old-service'), 1500).then(
      () => null,
      (err: unknown) => err,
    );
    expect(refused).to.be.instanceOf(GatewayError);
    expect((refused as GatewayError).status).to.equal(504);
    expect(oldClosed).to.match(/ACCESS_REFUSED.*amq\.default/);
    expect(await gateway!.request(request('new-service'), 5000)).to.deep.equal({ ok: true, result: 'new' });
    // A service of the version before P.replies.<service>, replying through P.replies, is answered meanwhile.
    await old!.close();
    oldClosed = '';
    old = await startOldService('replies');
    expect(await gateway!.request(request('old-service'), 5000)).to.deep.equal({ ok: true, result: 'old' });
    expect(oldClosed).to.equal('');
  });
});
