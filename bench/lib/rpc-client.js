'use strict';
/**
 * The smallest correct amqplib RPC client: one channel, direct reply-to, a Map of pending requests keyed by
 * correlation id. Used by the floor policy (c) and the bus-limit client (f). It uses the project's amqplib
 * (2.x, what the plugin uses), not the 0.10 that bench/node_modules holds for moleculer.
 */
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..');
const amqp = require(require.resolve('amqplib', { paths: [ROOT] }));

const REPLY_TO = 'amq.rabbitmq.reply-to';

async function rpcClient(url, queue) {
  const conn = await amqp.connect(url, { noDelay: true });
  const ch = await conn.createChannel();
  const pending = new Map();
  let seq = 0;
  await ch.consume(
    REPLY_TO,
    (msg) => {
      if (!msg) return;
      const p = pending.get(msg.properties.correlationId);
      if (!p) return;
      pending.delete(msg.properties.correlationId);
      p.resolve(msg.content);
    },
    { noAck: true },
  );
  return {
    /** Resolves to the reply's bytes. */
    call(payload) {
      const id = String(++seq);
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject });
        ch.sendToQueue(queue, Buffer.from(JSON.stringify(payload)), { correlationId: id, replyTo: REPLY_TO, contentType: 'application/json' });
      });
    },
    async close() {
      for (const p of pending.values()) p.reject(new Error('closed'));
      pending.clear();
      await conn.close().catch(() => undefined);
    },
  };
}

/** The service side of the same protocol: answers `{ userId }` with the bench user, prefetch as the SDK's (16). */
async function rpcService(url, queue, prefetch = 16) {
  const { benchUser } = require('./user');
  const conn = await amqp.connect(url, { noDelay: true });
  const ch = await conn.createChannel();
  await ch.prefetch(prefetch);
  await ch.assertQueue(queue, { durable: false, autoDelete: true });
  await ch.consume(queue, (msg) => {
    if (!msg) return;
    let userId = 'unknown';
    try {
      userId = String(JSON.parse(msg.content.toString('utf8')).userId);
    } catch {
      // a malformed request still gets an answer
    }
    ch.sendToQueue(msg.properties.replyTo, Buffer.from(JSON.stringify(benchUser(userId))), { correlationId: msg.properties.correlationId, contentType: 'application/json' });
    ch.ack(msg);
  });
  return { close: () => conn.close().catch(() => undefined) };
}

module.exports = { rpcClient, rpcService };
