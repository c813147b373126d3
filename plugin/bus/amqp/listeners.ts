import { createHash, randomUUID } from 'node:crypto';
import type { Channel, ConsumeMessage, Message } from 'amqplib';
import type { Announcement } from '../../contracts/types';
import { DEFAULT_ANNOUNCEMENT_LIMITS } from '../../contracts/limits';
import { DEFAULT_ANNOUNCEMENT_BYTES_PER_SECOND } from '../constants';
import { inert, OnceLog } from '../../log-once';
import { ByteBudget } from '../byte-budget';
import { callGuarded } from '../notify';
import type { AnnouncementListener, Subscription } from '../transport';
import type { AmqpConnection } from './connection';
import { readyChannel, type AmqpConsumers, type Registration } from './consumers';
import { hasInvalidHeaders } from './header-guard';
import { bindIfAllowed } from './service-exchanges';
import { ANNOUNCE_BINDING, announcedService, announceKey, DISCOVER_KEY } from './wire';

/*
 * The listeners on the discovery exchange: the gateway's intake of announcements and the services' discovery
 * requests. The intake is fair per service: each known service (announcementUsers, the services file) has a queue
 * of its own bound to `announce.<service>`, with its own byte budget, prefetch and length cap, and every other
 * service shares one queue bound to `announce.#` — so one service flooding its own key fills and drops only its own
 * queue while the others' announcements (and the gateway's requests) go on at once. Sizes are bounded before parsing.
 */

/** How much announcement traffic the gateway takes in. */
export interface AnnouncementIntake {
  /** A larger message is dropped unparsed. */
  maxBytes: number;
  /** Announcement bytes handled per second from each queue; beyond it the broker holds (and at its cap drops the oldest of) the rest. */
  bytesPerSecond: number;
  /** The services with a queue of their own; the rest share one. */
  services: readonly string[];
  /**
   * Whether services not in `services` may announce (then they share one queue). False with a services file, which
   * refuses every other service: no shared queue, and so no second copy of the known services' traffic.
   */
  others: boolean;
}

const DEFAULT_ANNOUNCEMENT_INTAKE: Readonly<AnnouncementIntake> = Object.freeze({
  maxBytes: DEFAULT_ANNOUNCEMENT_LIMITS.maxBytes,
  bytesPerSecond: DEFAULT_ANNOUNCEMENT_BYTES_PER_SECOND,
  services: [],
  others: true,
});
/** Announcements in hand at once (unacked), per queue: a service's own, and the shared one. */
const SERVICE_PREFETCH = 4;
const SHARED_PREFETCH = 16;
/** A queue holds this many announcements of the largest size: the broker drops the oldest beyond, and a larger message on arrival. */
const QUEUE_SIZES = 4;
/** Messages a service's own queue holds: announcements replace each other, the newest is the one that counts. */
const SERVICE_QUEUE_LENGTH = 16;
const SHARED_QUEUE_LENGTH = 1_000;
/** What one message costs beyond its bytes, in budget bytes: a flood of empty messages is held to ~4,000 a second at 4 MB/s. */
const MESSAGE_OVERHEAD_BYTES = 1024;
/** A name that is one topic word (no `.`, `*`, `#`), so `announce.<service>` binds it and nothing else. */
const PLAIN_SERVICE = /^[A-Za-z0-9_-]{1,200}$/;

/** One queue of the intake: a service's own (`service` set), or the shared one. */
interface Lane {
  service?: string;
  bindingKey: string;
  budget: ByteBudget;
  queue: string;
  /** The exchange services announce on for this lane: the service's own, or the shared one. */
  exchange: string;
  /** Whether the queue is bound to `exchange` (false under broker definitions from before it). */
  bound: boolean;
}

/** What a message costs the intake's budget: its body, its header strings (up to ~128 KB) and a fixed overhead. */
function intakeCost(msg: ConsumeMessage): number {
  let bytes = msg.content.length + MESSAGE_OVERHEAD_BYTES;
  const headers = msg.properties.headers as Record<string, unknown> | undefined;
  for (const key in headers) {
    const v = headers[key];
    bytes += key.length + (typeof v === 'string' ? v.length : Buffer.isBuffer(v) ? v.length : 8);
  }
  return bytes;
}

/** Acks a delivery by its tag alone: a delayed ack must not keep the message (up to maxBytes, or more) alive. */
function ackTag(ch: Channel, deliveryTag: number): void {
  try {
    ch.ack({ fields: { deliveryTag } } as Message);
  } catch {
    // the channel closed meanwhile; the broker requeues on its own
  }
}

export class AmqpListeners {
  private readonly intake: AnnouncementIntake;
  /** Dropped announcements: one line per sender and reason per minute, whatever the rate they come at. */
  private readonly droppedLog: OnceLog;
  private announcementListener: Registration | undefined;

  constructor(
    private readonly conn: AmqpConnection,
    private readonly consumers: AmqpConsumers,
    intake: Partial<AnnouncementIntake> | undefined,
  ) {
    this.intake = { ...DEFAULT_ANNOUNCEMENT_INTAKE, ...intake };
    this.droppedLog = new OnceLog(conn.logger);
  }

  onAnnouncement(listener: AnnouncementListener): Promise<Subscription> {
    const own = [...new Set(this.intake.services)].filter((s) => PLAIN_SERVICE.test(s));
    const names = this.conn.names;
    const lane = (service: string | undefined): Lane => ({
      service,
      bindingKey: service === undefined ? ANNOUNCE_BINDING : announceKey(service),
      budget: new ByteBudget(this.intake.bytesPerSecond),
      queue: '',
      exchange: service === undefined ? names.announceExchange : names.serviceAnnounceExchange(service),
      bound: false,
    });
    const lanes = this.intake.others || own.length === 0 ? [...own.map(lane), lane(undefined)] : own.map(lane);
    const ownKeys = new Set(own.map(announceKey));
    const reg: Registration = this.consumers.create('announcement listener', {
      rebind: async (ch) => {
        for (const l of lanes) {
          await ch.bindQueue(l.queue, names.discoveryExchange, l.bindingKey);
          if (!l.bound) continue;
          await ch.assertExchange(l.exchange, 'topic', { durable: true });
          await ch.bindQueue(l.queue, l.exchange, l.bindingKey);
        }
      },
      attach: async (ch) => {
        let tag = '';
        for (const l of lanes) {
          const cap = {
            'x-max-length': l.service === undefined ? SHARED_QUEUE_LENGTH : SERVICE_QUEUE_LENGTH,
            'x-max-length-bytes': QUEUE_SIZES * this.intake.maxBytes,
            'x-overflow': 'drop-head',
          };
          // basic.qos per consumer (not global): each queue's prefetch is its own.
          await ch.prefetch(l.service === undefined ? SHARED_PREFETCH : SERVICE_PREFETCH);
          tag = await this.attach(
            ch,
            l,
            'announce',
            l.bindingKey,
            (msg) => {
              if (msg === null) return this.consumers.brokerCancelled(reg, ch);
              // The shared queue sees the known services' announcements too (a topic binding excludes nothing): their
              // own queue has them, so they are acked here unread.
              if (l.service === undefined && ownKeys.has(msg.fields.routingKey))
                return ackTag(ch, msg.fields.deliveryTag);
              this.onAnnouncementMessage(msg, listener);
              // Acked only once within the queue's byte budget: until then the broker holds the rest (prefetch), and
              // its length cap drops the oldest, so a flood costs the gateway a bounded share of its time.
              const wait = l.budget.take(intakeCost(msg));
              if (wait > 0) setTimeout(ackTag, wait, ch, msg.fields.deliveryTag).unref();
              else ackTag(ch, msg.fields.deliveryTag);
            },
            cap,
          );
          // Services announce on their own exchange; the discovery exchange still carries the announcements of
          // services from before it, where the broker definitions let them (an upgrade).
          l.bound = reg.model !== null && (await bindIfAllowed(reg.model, l.queue, l.exchange, l.bindingKey));
        }
        return tag;
      },
    });
    this.announcementListener = reg;
    return this.consumers.register(reg);
  }

  /**
   * Why the announcement listener is not consuming (its consumer attached on the current connection); undefined
   * while it is. Before it is asked for, it is starting.
   */
  unheardReason(): string | undefined {
    const reg = this.announcementListener;
    if (reg === undefined) return 'the announcement listener is starting';
    if (readyChannel(reg) !== undefined) return undefined;
    return reg.refusal === null ? 'the announcement listener is starting' : `announcement listener: ${reg.refusal}`;
  }

  /**
   * One announcement off the bus, checked before anything else: its size (before parsing), that it is an object
   * naming a service, and that the service is the one in its routing key `announce.<service>` (which topic
   * permissions tie to the service's broker user). The rest of the checks are the registry's.
   */
  private onAnnouncementMessage(msg: ConsumeMessage, listener: AnnouncementListener): void {
    const routingKey = msg.fields.routingKey;
    const keyService = announcedService(routingKey);
    const userId = typeof msg.properties.userId === 'string' ? msg.properties.userId : undefined;
    const from = `routing key ${inert(routingKey)}${userId !== undefined ? `, broker user ${inert(userId)}` : ''}`;
    const drop = (reason: string): void =>
      this.droppedLog.warn(
        JSON.stringify([routingKey, userId, reason]),
        `bus: dropped an announcement (${from}): ${reason}`,
      );
    const max = this.intake.maxBytes;
    if (msg.content.length > max) return drop(`${msg.content.length} bytes, over ${max} (announcementMaxBytes)`);
    if (hasInvalidHeaders(msg)) return drop('headers nested too deep or undecodable');
    let announcement: unknown;
    try {
      announcement = JSON.parse(msg.content.toString('utf8'));
    } catch {
      return drop('not JSON');
    }
    if (!announcement || typeof announcement !== 'object' || Array.isArray(announcement))
      return drop('not a JSON object');
    const service = (announcement as { service?: unknown }).service;
    if (typeof service !== 'string') return drop('no service');
    if (service !== keyService) return drop(`service ${inert(service)} does not match the routing key`);
    const digest = createHash('sha1').update(msg.content).digest('base64');
    const origin =
      userId !== undefined ? { userId, digest, bytes: msg.content.length } : { digest, bytes: msg.content.length };
    callGuarded(this.conn.logger, 'announcement listener', () => listener(announcement as Announcement, origin));
  }

  onDiscoveryRequest(listener: () => void): Promise<Subscription> {
    const queue = { queue: '' };
    const reg: Registration = this.consumers.create('discovery listener', {
      rebind: (ch) => ch.bindQueue(queue.queue, this.conn.names.discoveryExchange, DISCOVER_KEY),
      attach: (ch) =>
        this.attach(ch, queue, 'discover', DISCOVER_KEY, (msg) => {
          if (msg === null) return this.consumers.brokerCancelled(reg, ch);
          callGuarded(this.conn.logger, 'discovery listener', listener);
        }),
    });
    return this.consumers.register(reg);
  }

  /**
   * An exclusive, auto-delete queue of this connection bound to the discovery exchange (its name, the broker's answer
   * for a server-named queue, kept in `queue.queue` for the keeper's re-binding). With `queueArgs` (the announcement queue) messages are acked by the consumer;
   * without, auto-acked.
   */
  private async attach(
    ch: Channel,
    queue: { queue: string },
    kind: string,
    bindingKey: string,
    onMessage: (msg: ConsumeMessage | null) => void,
    queueArgs?: Record<string, unknown>,
  ): Promise<string> {
    await this.conn.declareExchanges(ch);
    // A service's discovery queue is server-named (`amq.gen-…`, a prefix nobody may declare an exchange under), so
    // its broker user needs no configure permission on a name pattern it could also give an exchange of its own.
    const asked = kind === 'discover' ? '' : this.conn.names.listenerQueue(kind, randomUUID());
    const { queue: name } = await ch.assertQueue(asked, {
      exclusive: true,
      autoDelete: true,
      durable: false,
      ...(queueArgs ? { arguments: queueArgs } : {}),
    });
    await ch.bindQueue(name, this.conn.names.discoveryExchange, bindingKey);
    queue.queue = name;
    const { consumerTag } = await ch.consume(name, onMessage, { noAck: queueArgs === undefined });
    return consumerTag;
  }
}
