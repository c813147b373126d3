import type { Channel, ChannelModel } from 'amqplib';
import { describeError } from '../../errors/describe';
import type { Subscription } from '../transport';
import { OrphanedReplies, type RunningDelivery } from './orphaned-replies';
import { channelRetryDelay, type AmqpConnection } from './connection';
import { noop } from '../../logger';

/*
 * The channels of the AMQP transport that live across reconnects — consumers (work queues, listeners, the gateway's
 * replies) and the publishing channels — each on a channel of its own: re-opened on every new connection, after the
 * broker closed its channel (with backoff), and after the broker cancelled its consumer; closed when its
 * Subscription is. A keeper re-asserts the exchanges (where this user may) and every binding every few seconds, so
 * a deleted exchange or binding is back by itself.
 */

/** How often the keeper re-asserts the exchanges and bindings. */
const TOPOLOGY_CHECK_MS = 2_000;

/** A channel registered through serve/onAnnouncement/onDiscoveryRequest or by the publisher; re-created after every reconnect. */
export interface Registration {
  label: string;
  prefetch?: number;
  /** A confirm channel (publishing with confirms) rather than a plain one. */
  confirm?: boolean;
  /** Declares what the consumer needs on `ch` and starts consuming; resolves to the consumer tag ('' for none). */
  attach(ch: Channel): Promise<string>;
  /** Runs on a channel of its own once the consumer is cancelled (its in-flight work may still be running). */
  detach?(ch: Channel): Promise<void>;
  /** Re-binds the consumer's queue on `ch` (the keeper's channel), for a binding or exchange that was deleted. */
  rebind?(ch: Channel): Promise<unknown>;
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
  /** Why the broker last refused to set it up, while it is not attached (a fixed phrase: no broker text). */
  refusal: string | null;
}

/** A registration's channel once it is attached (consuming, or ready to publish on), else undefined. */
export function readyChannel<C extends Channel = Channel>(reg: Registration): C | undefined {
  return reg.tag !== null && reg.ch !== null ? (reg.ch as C) : undefined;
}

export type RegistrationSpec = Pick<Registration, 'attach'> &
  Partial<Pick<Registration, 'detach' | 'prefetch' | 'confirm' | 'rebind'>>;

export class AmqpConsumers {
  private readonly registrations = new Set<Registration>();
  private keeper: NodeJS.Timeout | null = null;
  private keeping = false;

  constructor(private readonly conn: AmqpConnection) {}

  create(label: string, spec: RegistrationSpec): Registration {
    return {
      label,
      prefetch: spec.prefetch,
      confirm: spec.confirm,
      attach: spec.attach,
      detach: spec.detach,
      rebind: spec.rebind,
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
      refusal: null,
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
        if (this.conn.model === model) reg.refusal = refusalOf(err);
        if (this.conn.model === model && isBrokerLimit(err)) {
          // A broker limit (the vhost's queues, say, filled by another user of it) lifts again: retry, don't fail.
          this.conn.logger.warn(`bus: could not start ${reg.label}: ${describeError(err)}; retrying`);
          if (reg.model === model) reg.model = null;
          this.scheduleReopen(reg, model);
          return { close: () => this.close(reg) };
        }
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
        reg.refusal = refusalOf(err);
        // A channel-level problem of one consumer must not keep the whole connection down.
        this.conn.logger.warn(`bus: could not start ${reg.label}: ${describeError(err)}`);
        this.scheduleReopen(reg, model);
      }
    }
    this.startKeeper(model);
  }

  lost(model: ChannelModel): void {
    this.stopKeeper();
    for (const reg of this.registrations) {
      if (reg.model === model) this.reset(reg);
    }
  }

  closeAll(): Promise<unknown> {
    this.stopKeeper();
    return Promise.all([...this.registrations].map((reg) => this.close(reg)));
  }

  private startKeeper(model: ChannelModel): void {
    this.stopKeeper();
    this.keeper = setInterval(() => void this.keepTopology(model), TOPOLOGY_CHECK_MS);
    this.keeper.unref();
  }

  private stopKeeper(): void {
    if (this.keeper) clearInterval(this.keeper);
    this.keeper = null;
  }

  /**
   * Re-asserts the exchanges (when this broker user may declare them) and the binding of every open consumer, each
   * on the keeper's channel; a refusal (e.g. the exchange is gone and this user may not declare it) closes that
   * channel, and the next step gets a new one. Everything here is idempotent on an intact topology.
   */
  private async keepTopology(model: ChannelModel): Promise<void> {
    if (this.keeping || this.conn.closing || this.conn.model !== model) return;
    this.keeping = true;
    const side: { ch: Channel | null } = { ch: null };
    const step = async (what: (c: Channel) => Promise<unknown>): Promise<void> => {
      if (this.conn.closing || this.conn.model !== model) return;
      try {
        if (!side.ch) {
          side.ch = await model.createChannel();
          side.ch.on('error', noop);
        }
        await what(side.ch);
      } catch {
        const dead = side.ch;
        side.ch = null;
        await dead?.close().catch(noop);
      }
    };
    try {
      if (this.conn.declaresExchanges) await step((c) => this.conn.declareExchanges(c));
      for (const reg of this.registrations) {
        const rebind = reg.rebind;
        if (rebind && reg.tag && reg.model === model && !reg.closed) await step(rebind);
      }
    } finally {
      this.keeping = false;
      await side.ch?.close().catch(noop);
    }
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
      ch = reg.confirm ? await model.createConfirmChannel() : await model.createChannel();
    } catch (err) {
      if (reg.model === model) reg.model = null;
      throw err;
    }
    this.conn.watchChannel(ch, reg.label, () => this.onChannelClosed(reg, ch, model));
    try {
      if (reg.prefetch) await ch.prefetch(reg.prefetch);
      reg.ch = ch;
      const tag = await reg.attach(ch);
      if (reg.ch === ch) {
        reg.tag = tag;
        reg.refusal = null;
      }
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

  /**
   * Gives `reg` a new channel on the same connection without waiting for the current one to close: a channel the
   * broker no longer serves may not answer its close for as long as it is stuck (confirm-stall.ts).
   */
  replaceChannel(reg: Registration): void {
    const { ch, model } = reg;
    if (ch === null || model === null) return;
    this.reset(reg);
    ch.close().catch(noop);
    if (this.conn.model === model) this.scheduleReopen(reg, model);
  }

  /**
   * What the broker refuses to set up now, one line each: the registration's label and why, in words of our own
   * (e.g. `reply consumer of users-service: the broker refused it: a limit it enforces is reached …`).
   */
  refused(): string[] {
    const lines: string[] = [];
    for (const reg of this.registrations)
      if (reg.refusal !== null && readyChannel(reg) === undefined) lines.push(`${reg.label}: ${reg.refusal}`);
    return lines;
  }

  /**
   * Gives `reg` a new channel, attached before the current one is let go, so there is no moment without one (a
   * publisher keeps sending on the old channel meanwhile); resolves to the old channel, which the caller closes once
   * what it sent there is settled, or undefined when nothing was handed over (not attached, closed, or the new
   * channel could not be opened: the old one stays).
   */
  async handOver(reg: Registration): Promise<Channel | undefined> {
    const { ch: old, model } = reg;
    if (old === null || model === null || reg.tag === null || reg.closed || this.conn.model !== model) return undefined;
    let ch: Channel;
    try {
      ch = reg.confirm ? await model.createConfirmChannel() : await model.createChannel();
    } catch {
      return undefined;
    }
    const current = () => reg.ch === old && !reg.closed && this.conn.model === model;
    try {
      if (!current()) throw new Error('superseded');
      this.conn.watchChannel(ch, reg.label, () => this.onChannelClosed(reg, ch, model));
      if (reg.prefetch) await ch.prefetch(reg.prefetch);
      const tag = await reg.attach(ch);
      if (!current()) throw new Error('superseded');
      // From here the old channel's close is not this registration's concern (onChannelClosed compares channels).
      reg.ch = ch;
      reg.tag = tag;
      return old;
    } catch {
      await ch.close().catch(noop);
      return undefined;
    }
  }

  private scheduleReopen(reg: Registration, model: ChannelModel): void {
    if (reg.closed || this.conn.closing || reg.retryTimer) return;
    const delay = channelRetryDelay(reg.failures++);
    reg.retryTimer = setTimeout(() => {
      reg.retryTimer = null;
      if (reg.closed || this.conn.closing || this.conn.model !== model || reg.model === model) return;
      this.open(reg, model).catch((err) => {
        reg.refusal = refusalOf(err);
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

/** Why a registration could not be set up, in words of our own: a response may carry it, never the broker's text. */
function refusalOf(err: unknown): string {
  return isBrokerLimit(err)
    ? "the broker refused it: a limit it enforces is reached (such as the vhost's queue limit)"
    : 'the broker refused it';
}

/**
 * Whether the broker refused an operation for a limit it enforces (`queue limit in vhost … is reached`), which
 * lifts again when others release what they hold: unlike a conflicting declaration, worth retrying.
 */
function isBrokerLimit(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  return e?.code === 406 && typeof e.message === 'string' && /\blimit\b.*\bis reached\b/.test(e.message);
}
