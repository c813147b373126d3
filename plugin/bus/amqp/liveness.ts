import type { ChannelModel } from 'amqplib';

/*
 * A node that stops answering without closing its sockets (a stalled VM, a partition, a long GC pause) keeps the
 * connection open: what is published waits in the socket and nothing comes back. amqplib gives up on it only after
 * two to three heartbeats go unanswered; RabbitMQ sends a frame at least every half heartbeat, so a whole heartbeat
 * without one already means the node is gone, and the connection is dropped then (amqplib's recovery moves on).
 */

/** How often the socket's byte count is read. */
const POLL_MS = 500;

/** The fields of amqplib's connection read here (not in its typings): the heartbeat and the socket. */
interface ConnectionInternals {
  heartbeat?: number;
  stream?: { bytesRead?: number; destroy(err?: Error): void };
}

/**
 * Calls `silent` (once) when `model` has received nothing for a whole heartbeat, after destroying its socket so
 * that amqplib closes it and reconnects. Does nothing for a connection without heartbeats (nothing to tell a quiet
 * connection from a dead one by). Stops when the connection closes.
 */
export function dropWhenSilent(model: ChannelModel, silent: (silentMs: number) => void, now = Date.now): void {
  const conn = model.connection as unknown as ConnectionInternals;
  const heartbeatMs = (conn.heartbeat ?? 0) * 1000;
  const stream = conn.stream;
  if (heartbeatMs <= 0 || typeof stream?.bytesRead !== 'number') return;
  let bytes = stream.bytesRead;
  let heardAt = now();
  let lastPoll = heardAt;
  const timer = setInterval(() => {
    const at = now();
    const late = at - lastPoll > 2 * POLL_MS;
    lastPoll = at;
    // A poll that ran late (this process stalled, its socket not read meanwhile) cannot tell: it starts over.
    if (stream.bytesRead !== bytes || late) {
      bytes = stream.bytesRead ?? bytes;
      heardAt = at;
      return;
    }
    if (at - heardAt < heartbeatMs) return;
    clearInterval(timer);
    silent(at - heardAt);
    stream.destroy(new Error(`no frame from the broker for ${at - heardAt} ms`));
  }, POLL_MS);
  timer.unref();
  model.once('close', () => clearInterval(timer));
}
