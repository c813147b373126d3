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
    /**
     * The message the product's gateway sends (docs/bus-protocol.md): `{input}` body, correlation/request ids and the
     * user as headers, the deadline as expiration, mandatory, the message type; a timer per request for the deadline.
     * Resolves to the reply's envelope, parsed.
     */
    callProtocol(messageType, input, headers, timeoutMs) {
      const id = String(++seq);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          if (pending.delete(id)) reject(new Error('timeout'));
        }, timeoutMs);
        pending.set(id, {
          resolve: (content) => {
            clearTimeout(timer);
            try {
              resolve(JSON.parse(content.toString('utf8')));
            } catch (err) {
              reject(err);
            }
          },
          reject,
        });
        ch.sendToQueue(queue, Buffer.from(JSON.stringify({ input })), {
          correlationId: id,
          replyTo: REPLY_TO,
          contentType: 'application/json',
          type: messageType,
          expiration: String(timeoutMs),
          mandatory: true,
          headers,
        });
      });
    },
    /** Resolves to the reply's bytes. */
    call(payload) {
      const id = String(++seq);
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject });
        ch.sendToQueue(queue, Buffer.from(JSON.stringify(payload)), {
          correlationId: id,
          replyTo: REPLY_TO,
          contentType: 'application/json',
        });
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
  const { benchUser, payload } = require('./user');
  const conn = await amqp.connect(url, { noDelay: true });
  const ch = await conn.createChannel();
  await ch.prefetch(prefetch);
  await ch.assertQueue(queue, { durable: false, autoDelete: true });
  await ch.consume(queue, (msg) => {
    if (!msg) return;
    let userId = 'unknown';
    let enveloped = false;
    try {
      const body = JSON.parse(msg.content.toString('utf8'));
      // The protocol floor (p) sends {input} and reads the {ok, result} envelope; the floor (c) sends and reads bare JSON.
      enveloped = body.input !== undefined;
      userId = String(enveloped ? body.input.userId : body.userId);
      // A service reads the caller from the user header: the protocol floor's service pays for that too.
      if (enveloped && msg.properties.headers?.user) JSON.parse(String(msg.properties.headers.user));
    } catch {
      // a malformed request still gets an answer
    }
    // `pad-<bytes>`: the reply-size sweep's payload instead of one user.
    const user = userId.startsWith('pad-') ? payload(Number(userId.slice(4))) : benchUser(userId);
    const reply = enveloped ? { ok: true, result: user } : user;
    ch.sendToQueue(msg.properties.replyTo, Buffer.from(JSON.stringify(reply)), {
      correlationId: msg.properties.correlationId,
      contentType: 'application/json',
    });
    ch.ack(msg);
  });
  return { close: () => conn.close().catch(() => undefined) };
}

module.exports = { rpcClient, rpcService };
