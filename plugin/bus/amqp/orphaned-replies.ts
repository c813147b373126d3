import type { ConsumeMessage } from 'amqplib';

/** A delivery whose handler runs on this consumer: what it is, and the reply body it will settle with. */
export interface RunningDelivery {
  type: unknown;
  content: Buffer;
  reply: Promise<Buffer>;
}

/** How long the reply of a delivery whose channel died is kept for its redelivery (above any request deadline in use). */
const KEEP_MS = 120_000;

/**
 * The deliveries a consumer was handling when its channel or connection died. The broker redelivers them (to this
 * consumer once it is back, if no other instance took them); the handler is still running or has finished here, so
 * the redelivery is answered with that run's reply instead of running the request a second time — keyed or not.
 * Matched by the request's correlation id (a fresh id per request from the gateway), type and body.
 */
export class OrphanedReplies {
  private readonly byId = new Map<string, RunningDelivery>();

  /** Keeps the deliveries still running on a channel that is gone. */
  adopt(running: ReadonlyMap<string, RunningDelivery>): void {
    if (running.size === 0) return;
    const ids = [...running.keys()];
    for (const id of ids) this.byId.set(id, running.get(id) as RunningDelivery);
    setTimeout(() => {
      for (const id of ids) this.byId.delete(id);
    }, KEEP_MS).unref();
  }

  /** The reply of the earlier run of this redelivered request, if this consumer ran it. */
  take(msg: ConsumeMessage): Promise<Buffer> | undefined {
    const id = msg.properties.correlationId as string | undefined;
    const earlier = id === undefined ? undefined : this.byId.get(id);
    if (!earlier || earlier.type !== msg.properties.type || !earlier.content.equals(msg.content)) return undefined;
    this.byId.delete(id as string);
    return earlier.reply;
  }
}
