import { createHash, randomUUID } from 'node:crypto';
import type { Channel, ConsumeMessage } from 'amqplib';
import type { Announcement } from '../../contracts/types';
import { DEFAULT_ANNOUNCEMENT_LIMITS } from '../../contracts/limits';
import { DEFAULT_ANNOUNCEMENT_BYTES_PER_SECOND } from '../constants';
import { inert, OnceLog } from '../../log-once';
import { ByteBudget } from '../byte-budget';
import { callGuarded } from '../notify';
import type { AnnouncementListener, Subscription } from '../transport';
import type { AmqpConnection } from './connection';
import type { AmqpConsumers, Registration } from './consumers';
import { hasInvalidHeaders } from './header-guard';
import { ANNOUNCE_BINDING, announcedService, DISCOVER_KEY } from './wire';

/*
 * The listeners on the discovery exchange: the gateway's intake of announcements (bounded in size before parsing
 * and in bytes per second) and the services' discovery requests.
 */

/** How much announcement traffic the gateway takes in. */
export interface AnnouncementIntake {
  /** A larger message is dropped unparsed. */
  maxBytes: number;
  /** Announcement bytes handled per second; beyond it the broker holds (and at its cap drops the oldest of) the rest. */
  bytesPerSecond: number;
}

export const DEFAULT_ANNOUNCEMENT_INTAKE: Readonly<AnnouncementIntake> = Object.freeze({
  maxBytes: DEFAULT_ANNOUNCEMENT_LIMITS.maxBytes,
  bytesPerSecond: DEFAULT_ANNOUNCEMENT_BYTES_PER_SECOND,
});
/** Announcements in hand at once (unacked). */
const ANNOUNCE_PREFETCH = 64;
/** The broker keeps at most this much of a flood for the gateway; the oldest go first. */
const ANNOUNCE_QUEUE_ARGS = { 'x-max-length': 10_000, 'x-max-length-bytes': 32 * 1024 * 1024, 'x-overflow': 'drop-head' };

export class AmqpListeners {
  private readonly intake: AnnouncementIntake;
  /** Dropped announcements: one line per sender and reason per minute, whatever the rate they come at. */
  private readonly droppedLog: OnceLog;

  constructor(
    private readonly conn: AmqpConnection,
    private readonly consumers: AmqpConsumers,
    intake: Partial<AnnouncementIntake> | undefined,
  ) {
    this.intake = { ...DEFAULT_ANNOUNCEMENT_INTAKE, ...intake };
    this.droppedLog = new OnceLog(conn.logger);
  }

  onAnnouncement(listener: AnnouncementListener): Promise<Subscription> {
    const budget = new ByteBudget(this.intake.bytesPerSecond);
    const queue = { name: '' };
    const reg: Registration = this.consumers.create('announcement listener', {
      prefetch: ANNOUNCE_PREFETCH,
      rebind: (ch) => ch.bindQueue(queue.name, this.conn.names.discoveryExchange, ANNOUNCE_BINDING),
      attach: (ch) =>
        this.attach(ch, queue, 'announce', ANNOUNCE_BINDING, (msg) => {
          if (msg === null) return this.consumers.brokerCancelled(reg, ch);
          this.onAnnouncementMessage(msg, listener);
          // Acked only once within the byte budget: until then the broker holds the rest (prefetch), and its
          // queue's length cap drops the oldest, so a flood costs the gateway a bounded share of its time.
          const ack = (): void => {
            try {
              ch.ack(msg);
            } catch {
              // the channel closed meanwhile; the broker requeues on its own
            }
          };
          const wait = budget.take(msg.content.length);
          if (wait > 0) setTimeout(ack, wait).unref();
          else ack();
        }, ANNOUNCE_QUEUE_ARGS),
    });
    return this.consumers.register(reg);
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
    const drop = (reason: string): void => this.droppedLog.warn(JSON.stringify([routingKey, userId, reason]), `bus: dropped an announcement (${from}): ${reason}`);
    const max = this.intake.maxBytes;
    if (msg.content.length > max) return drop(`${msg.content.length} bytes, over ${max} (announcementMaxBytes)`);
    if (hasInvalidHeaders(msg)) return drop('headers nested too deep or undecodable');
    let announcement: unknown;
    try {
      announcement = JSON.parse(msg.content.toString('utf8'));
    } catch {
      return drop('not JSON');
    }
    if (!announcement || typeof announcement !== 'object' || Array.isArray(announcement)) return drop('not a JSON object');
    const service = (announcement as { service?: unknown }).service;
    if (typeof service !== 'string') return drop('no service');
    if (service !== keyService) return drop(`service ${inert(service)} does not match the routing key`);
    const digest = createHash('sha1').update(msg.content).digest('base64');
    const origin = userId !== undefined ? { userId, digest, bytes: msg.content.length } : { digest, bytes: msg.content.length };
    callGuarded(this.conn.logger, 'announcement listener', () => listener(announcement as Announcement, origin));
  }

  onDiscoveryRequest(listener: () => void): Promise<Subscription> {
    const queue = { name: '' };
    const reg: Registration = this.consumers.create('discovery listener', {
      rebind: (ch) => ch.bindQueue(queue.name, this.conn.names.discoveryExchange, DISCOVER_KEY),
      attach: (ch) =>
        this.attach(ch, queue, 'discover', DISCOVER_KEY, (msg) => {
          if (msg === null) return this.consumers.brokerCancelled(reg, ch);
          callGuarded(this.conn.logger, 'discovery listener', listener);
        }),
    });
    return this.consumers.register(reg);
  }

  /**
   * An exclusive, auto-delete queue of this connection bound to the discovery exchange (its name kept in `queue`,
   * for the keeper's re-binding). With `queueArgs` (the announcement queue) messages are acked by the consumer;
   * without, auto-acked.
   */
  private async attach(
    ch: Channel,
    queue: { name: string },
    kind: string,
    bindingKey: string,
    onMessage: (msg: ConsumeMessage | null) => void,
    queueArgs?: Record<string, unknown>,
  ): Promise<string> {
    await this.conn.declareExchanges(ch);
    const name = this.conn.names.listenerQueue(kind, randomUUID());
    await ch.assertQueue(name, { exclusive: true, autoDelete: true, durable: false, ...(queueArgs ? { arguments: queueArgs } : {}) });
    await ch.bindQueue(name, this.conn.names.discoveryExchange, bindingKey);
    queue.name = name;
    const { consumerTag } = await ch.consume(name, onMessage, { noAck: queueArgs === undefined });
    return consumerTag;
  }
}
