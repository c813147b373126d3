import type { Channel } from 'amqplib';

/*
 * A request channel the broker takes publishes on but never confirms. RabbitMQ 3.10.8, three nodes, the node holding
 * a quorum queue's leader frozen (SIGSTOP): a channel opened on a surviving node in the seconds before the cluster
 * declared that node down (a client that noticed first, by its heartbeat, and moved) sent every publish to that
 * queue to the frozen node for as long as it stayed frozen: in 45 s, one nack every 7 s and no ack, nothing
 * enqueued, then everything at once on the resume; a channel opened after the node was declared down (about 11 s)
 * was confirmed in milliseconds. A plain channel loses the same requests silently. So the gateway's request
 * channels are confirm channels, and one whose oldest publish has waited CONFIRM_STALL_MS for its confirm is
 * replaced at once (consumers.ts): such a channel may not answer its close either while it is stuck.
 */

/** How long a request channel's oldest unconfirmed publish may wait before the channel counts as stuck. */
export const CONFIRM_STALL_MS = 3_000;
/** How often the request channels are looked at. */
export const CONFIRM_CHECK_MS = 500;

/** The publishes of one channel not yet confirmed, oldest first. */
export class ConfirmWatch {
  private next = 0;
  private readonly sentAt = new Map<number, { at: number; id: string }>();
  /** Set once the channel was found stuck (it is closing). */
  stalled = false;

  /** The publish of request `id` went out at `now`: the token to hand confirmed(). */
  sent(now: number, id: string): number {
    const token = this.next++;
    this.sentAt.set(token, { at: now, id });
    return token;
  }

  /** Its confirm came (an ack, a nack, or the channel closed). */
  confirmed(token: number): void {
    this.sentAt.delete(token);
  }

  /** How long the oldest unconfirmed publish has waited at `now` (0: none is waiting). */
  waitedMs(now: number): number {
    for (const { at } of this.sentAt.values()) return now - at;
    return 0;
  }

  /** The requests still waiting for their confirm, forgotten here (their channel is being replaced). */
  drain(): string[] {
    const ids = [...this.sentAt.values()].map((s) => s.id);
    this.sentAt.clear();
    return ids;
  }
}

/** The watch of each channel, made on first use. */
export class ConfirmWatches {
  private readonly byChannel = new WeakMap<Channel, ConfirmWatch>();

  of(ch: Channel): ConfirmWatch {
    let watch = this.byChannel.get(ch);
    if (!watch) {
      watch = new ConfirmWatch();
      this.byChannel.set(ch, watch);
    }
    return watch;
  }

  /** The requests waiting on `ch` when it is stuck at `now` (and not found so before), else undefined. */
  stuck(ch: Channel, now: number): string[] | undefined {
    const watch = this.of(ch);
    if (watch.stalled || watch.waitedMs(now) < CONFIRM_STALL_MS) return undefined;
    watch.stalled = true;
    return watch.drain();
  }
}
