import type { Channel, ChannelModel } from 'amqplib';
import { describeError } from '../../errors/describe';
import type { Subscription } from '../transport';
import { OrphanedReplies, type RunningDelivery } from './orphaned-replies';
import { channelRetryDelay, type AmqpConnection } from './connection';
import { noop } from '../logger';

/*
 * The consumers of the AMQP transport (work queues, announcement and discovery listeners), each on a channel of its
 * own that lives across reconnects: re-opened on every new connection, after the broker closed its channel (with
 * backoff), and after the broker cancelled it; closed when its Subscription is.
 */

/** A consumer registered through serve/onAnnouncement/onDiscoveryRequest; re-created after every reconnect. */
export interface Registration {
  label: string;
  prefetch?: number;
  /** Declares what the consumer needs on `ch` and starts consuming; resolves to the consumer tag. */
  attach(ch: Channel): Promise<string>;
  /** Runs on a channel of its own once the consumer is cancelled (its in-flight work may still be running). */
  detach?(ch: Channel): Promise<void>;
  model: ChannelModel | null;
  ch: Channel | null;
  tag: string | null;
  opening: Promise<void> | null;
  closed: boolean;
  inflight: Set<Promise<void>>;
  /** Work consumers: the deliveries being handled on the current channel, by correlation id. */
  running: Map<string, RunningDelivery>;
  /** Work consumers: what was being handled on channels that died, for the redeliveries. */
  orphans: OrphanedReplies;
  failures: number;
  retryTimer: NodeJS.Timeout | null;
}

export type RegistrationSpec = Pick<Registration, 'attach'> & Partial<Pick<Registration, 'detach' | 'prefetch'>>;

export class AmqpConsumers {
  private readonly registrations = new Set<Registration>();

  constructor(private readonly conn: AmqpConnection) {}

  create(label: string, spec: RegistrationSpec): Registration {
    return {
      label,
      prefetch: spec.prefetch,
      attach: spec.attach,
      detach: spec.detach,
      model: null,
      ch: null,
      tag: null,
      opening: null,
      closed: false,
      inflight: new Set(),
      running: new Map(),
      orphans: new OrphanedReplies(),
      failures: 0,
      retryTimer: null,
    };
  }

  /** Adds a consumer that lives until its Subscription closes, across reconnects. */
  async register(reg: Registration): Promise<Subscription> {
    if (this.conn.closing) throw new Error('The transport is closed');
    this.registrations.add(reg);
    const model = this.conn.model;
    if (model) {
      try {
        await this.open(reg, model);
      } catch (err) {
        if (this.conn.model === model) {
          // The connection is fine: this consumer itself cannot be set up (e.g. a conflicting queue).
          this.registrations.delete(reg);
          reg.closed = true;
          throw err;
        }
        // The connection dropped meanwhile: the consumer starts with the next connection.
      }
    }
    // Not connected (yet): connected() opens it when the connection comes up.
    return { close: () => this.close(reg) };
  }

  /** Opens every consumer on a new connection. */
  async connected(model: ChannelModel): Promise<void> {
    // A Set iterates over members added while we await, so a serve() racing with setup is covered.
    for (const reg of this.registrations) {
      try {
        await this.open(reg, model);
      } catch (err) {
        if (this.conn.model !== model) throw err;
        // A channel-level problem of one consumer must not keep the whole connection down.
        this.conn.logger.warn(`bus: could not start ${reg.label}: ${describeError(err)}`);
        this.scheduleReopen(reg, model);
      }
    }
  }

  lost(model: ChannelModel): void {
    for (const reg of this.registrations) {
      if (reg.model === model) this.reset(reg);
    }
  }

  closeAll(): Promise<unknown> {
    return Promise.all([...this.registrations].map((reg) => this.close(reg)));
  }

  private open(reg: Registration, model: ChannelModel): Promise<void> {
    if (reg.closed || reg.model === model) return reg.opening ?? Promise.resolve();
    reg.model = model;
    const opening = this.doOpen(reg, model);
    reg.opening = opening;
    void opening.then(
      () => {
        if (reg.opening === opening) reg.opening = null;
      },
      () => {
        if (reg.opening === opening) reg.opening = null;
      },
    );
    return opening;
  }

  private async doOpen(reg: Registration, model: ChannelModel): Promise<void> {
    let ch: Channel;
    try {
      ch = await model.createChannel();
    } catch (err) {
      if (reg.model === model) reg.model = null;
      throw err;
    }
    this.conn.watchChannel(ch, reg.label, () => this.onChannelClosed(reg, ch, model));
    try {
      if (reg.prefetch) await ch.prefetch(reg.prefetch);
      reg.ch = ch;
      const tag = await reg.attach(ch);
      if (reg.ch === ch) reg.tag = tag;
    } catch (err) {
      if (reg.ch === ch) this.reset(reg);
      await ch.close().catch(noop);
      throw err;
    }
    reg.failures = 0;
  }

  private reset(reg: Registration): void {
    // The channel is gone with what it was handling: the broker will redeliver those.
    reg.orphans.adopt(reg.running);
    reg.running.clear();
    reg.model = null;
    reg.ch = null;
    reg.tag = null;
  }

  private onChannelClosed(reg: Registration, ch: Channel, model: ChannelModel): void {
    if (reg.ch !== ch) return;
    this.reset(reg);
    // If the whole connection is going down, lost() runs right after this and the next connection re-opens the
    // consumer; otherwise the broker closed just this channel.
    setImmediate(() => {
      if (this.conn.model === model) this.scheduleReopen(reg, model);
    });
  }

  private scheduleReopen(reg: Registration, model: ChannelModel): void {
    if (reg.closed || this.conn.closing || reg.retryTimer) return;
    const delay = channelRetryDelay(reg.failures++);
    reg.retryTimer = setTimeout(() => {
      reg.retryTimer = null;
      if (reg.closed || this.conn.closing || this.conn.model !== model || reg.model === model) return;
      this.open(reg, model).catch((err) => {
        this.conn.logger.warn(`bus: could not re-open ${reg.label}: ${describeError(err)}`);
        if (this.conn.model === model) this.scheduleReopen(reg, model);
      });
    }, delay);
  }

  /**
   * The broker cancelled a consumer (its queue was deleted): amqplib hands the callback `null`. The
   * instance still wants to serve, so re-declare and consume again once the work in flight on the
   * channel has finished (its acks need the channel).
   */
  brokerCancelled(reg: Registration, ch: Channel): void {
    if (reg.ch !== ch || reg.closed) return;
    this.conn.logger.warn(`bus: the broker cancelled the ${reg.label}; consuming again`);
    reg.tag = null;
    void Promise.allSettled([...reg.inflight]).then(() => {
      if (reg.ch !== ch || reg.closed || this.conn.closing) return;
      // Closing the channel hands over to the regular re-open path (with backoff).
      return ch.close().catch(noop);
    });
  }

  private async close(reg: Registration): Promise<void> {
    if (reg.closed) return;
    reg.closed = true;
    this.registrations.delete(reg);
    if (reg.retryTimer) clearTimeout(reg.retryTimer);
    reg.retryTimer = null;
    await reg.opening?.catch(noop);
    const ch = reg.ch;
    const tag = reg.tag;
    if (!ch) return;
    if (tag) await ch.cancel(tag).catch(noop);
    // Right after the cancel and on a channel of its own: the last consumer's work queue goes at once (503 for what
    // is sent from now on) while the handlers in flight still reply and ack on `ch` (an ack after the queue is gone
    // is harmless); a refusal — another instance still consumes — closes only that side channel.
    const model = this.conn.model;
    if (reg.detach && model) await this.detachQuietly(reg.detach, model);
    await Promise.allSettled([...reg.inflight]);
    this.reset(reg);
    await ch.close().catch(noop);
  }

  private async detachQuietly(detach: (ch: Channel) => Promise<void>, model: ChannelModel): Promise<void> {
    let side: Channel | undefined;
    try {
      side = await model.createChannel();
      side.on('error', noop);
      await detach(side);
    } catch {
      // e.g. PRECONDITION_FAILED: other instances still consume
    } finally {
      await side?.close().catch(noop);
    }
  }
}
