/**
 * A service that breaks the bus protocol on purpose (the conformance kit must fail it): it announces a contract for
 * another service with a short lease it never renews, answers every request (past its deadline, from any user)
 * without user_id, and on SIGTERM exits without a withdrawal or deleting its work queue.
 */
import * as amqp from 'amqplib';

async function main(): Promise<void> {
  const prefix = process.env.BUS_PREFIX ?? 'contracts';
  const service = 'bad-service';
  const model = await amqp.connect(process.env.BUS_URL ?? '', { noDelay: true });
  const queue = `${prefix}.svc.${service}`;
  const announcements = `${prefix}.announcements.${service}`;
  const replies = `${prefix}.replies.${service}`;
  // Declared where its user may (a shared credential); with a user of its own the broker definitions did.
  const probe = await model.createChannel();
  probe.on('error', () => undefined);
  await probe.assertExchange(announcements, 'topic', { durable: true }).catch(() => undefined);
  await probe.assertExchange(replies, 'topic', { durable: true }).catch(() => undefined);
  await probe
    .assertQueue(queue, { durable: false, autoDelete: false, arguments: { 'x-expires': 15000 } })
    .catch(() => undefined);
  await probe.close().catch(() => undefined);
  const ch = await model.createChannel();
  await ch.checkQueue(queue);
  await ch.bindQueue(queue, `${prefix}.requests`, service);
  const contracts = [
    {
      messageType: 'GetBadQuery',
      targetService: 'other-service',
      inputSchema: {},
      outputSchema: {},
      requiredPermissions: [],
    },
  ];
  const announce = () =>
    ch.publish(
      announcements,
      `announce.${service}`,
      Buffer.from(JSON.stringify({ service, instanceId: 'bad-1', ttlMs: 3000, contracts })),
      {
        contentType: 'application/json',
        userId: new URL(process.env.BUS_URL ?? '').username,
      },
    );
  const discover = await ch.assertQueue('', { exclusive: true });
  await ch.bindQueue(discover.queue, `${prefix}.discovery`, 'discover');
  await ch.consume(discover.queue, () => void announce(), { noAck: true });
  await ch.consume(queue, (msg) => {
    if (!msg) return;
    ch.publish(replies, msg.properties.replyTo, Buffer.from(JSON.stringify({ ok: true, result: {} })), {
      correlationId: msg.properties.correlationId,
    });
    ch.ack(msg);
  });
  process.on('SIGTERM', () => process.exit(0));
  console.log('[bad-service] ready');
}

main().catch((err) => {
  console.error(`[bad-service] start failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
