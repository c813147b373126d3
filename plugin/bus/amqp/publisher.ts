import { randomUUID } from 'node:crypto';
import type { Channel, ChannelModel, ConfirmChannel, ConsumeMessage, Message } from 'amqplib';
import type { Announcement } from '../../contracts/types';
import { describeError } from '../../errors/describe';
import { badGateway } from '../../errors/gateway-error';
import { inert, OnceLog } from '../../log-once';
import { newId } from '../../request/ids';
import { decodeReply, internalErrorReply, isReply } from '../envelope';
import { DEFAULT_MAX_REPLY_BYTES } from '../constants';
import { busClosing, busNotConnected, busRefused, noInstance, notEncodable } from '../failures';
import { PendingRequests, waitMs, type PendingRequest } from '../pending';
import type { Reply, RequestMessage } from '../transport';
import { noop } from '../logger';
import type { AmqpConnection } from './connection';
import type { AmqpConsumers, Registration } from './consumers';
import { announceKey, DISCOVER_KEY, encodeHeaders, encodeJson, JSON_TYPE } from './wire';

/*
 * The gateway side of the AMQP transport: requests out and their replies back (with their deadlines, and
 * basic.return for a service nobody consumes), and the confirmed publishes that have no reply (announcements,
 * discovery requests). Each of its three channels lives on its own (consumers.ts re-opens it): a channel error on
 * one request — the broker closes the channel it came on — neither loses the replies in flight, which come back on
 * another channel, nor stops the next requests for longer than the channel takes to re-open.
 */

interface AmqpPendingRequest extends PendingRequest {
  /** The request's trace id, for the log lines about it. */
  correlationId: string;
}

/** Which replies the gateway takes: those a service's own broker user published. */
export interface ReplyCheck {
  /** The broker user whose replies are taken for `service` (RabbitMQ-validated `user_id`); undefined: any publisher. */
  replyUser?: (service: string) => string | undefined;
  /** Told of each reply dropped for its publisher (a metric). */
  onRefusedReply?: (service: string) => void;
  /** A larger reply is answered 502 unparsed: parsing it could take the gateway's whole heap. */
  maxBytes?: number;
}


export class AmqpPublisher {
  /**
   * Requests go out on a plain channel (the reply is the request's acknowledgement; publisher confirms would cost
   * the broker and the gateway a frame per request and only turn a rare broker nack from a timeout into a 503).
   * Announcements and discovery requests, which have no reply, go out on a confirm channel.
   */
  private readonly requests: Registration;
  private readonly confirms: Registration;
  /** The consumer of the reply queue: registered with the first request (a service's transport sends none). */
  private replies: Registration | null = null;
  private registeringReplies: Promise<unknown> | null = null;
  /** The reply queue of the current connection (exclusive: it goes with the connection). */
  private replyQueue: { model: ChannelModel; name: string } | null = null;
  private readonly pending = new PendingRequests<AmqpPendingRequest>();
  private readonly requestExchange: string;
  private readonly discoveryExchange: string;
  private readonly brokerUser: string | undefined;
  /** Replies dropped for their publisher (one line per service and broker user per minute), and reply queue failures. */
  private readonly refusedLog: OnceLog;

  constructor(
    private readonly conn: AmqpConnection,
    private readonly consumers: AmqpConsumers,
    private readonly check: ReplyCheck = {},
  ) {
    this.requestExchange = conn.names.requestExchange;
    this.discoveryExchange = conn.names.discoveryExchange;
    this.brokerUser = conn.brokerUser;
    this.refusedLog = new OnceLog(conn.logger);
    this.requests = consumers.create('request channel', {
      attach: async (ch) => {
        ch.on('return', (msg: Message) => this.onReturn(msg));
        await this.conn.declareExchanges(ch);
        return '';
      },
    });
    this.confirms = consumers.create('announcement channel', {
      confirm: true,
      attach: async (ch) => {
        await this.conn.declareExchanges(ch);
        return '';
      },
    });
    // Registered before any consumer, so they open first on every connection (the connection is up only after).
    consumers.register(this.requests).catch(noop);
    consumers.register(this.confirms).catch(noop);
  }

  /** A registration's channel once it is ready (attached), else undefined. */
  private static ready<C extends Channel>(reg: Registration | null): C | undefined {
    return reg && reg.tag !== null && reg.ch ? (reg.ch as C) : undefined;
  }

  /** The connection is gone, and with it the reply queue: whatever was in flight can no longer be answered (502). */
  lost(): void {
    this.replyQueue = null;
    this.pending.failAll((p) => badGateway(p.service));
  }

  /** The first step of close(): the requests in flight are answered 503. */
  stop(): void {
    this.pending.failAll((p) => busClosing(p.service));
  }

  abortPending(error: () => Error): void {
    this.pending.failAll(error);
  }

  /** Opens the reply queue's consumer (once; again after it failed to open). */
  private openReplies(): Promise<unknown> {
    if (this.registeringReplies) return this.registeringReplies;
    const reg: Registration = this.consumers.create('reply consumer', {
      attach: async (ch) => {
        const model = reg.model;
        if (!model) throw new Error('The connection was lost');
        if (this.replyQueue?.model !== model) this.replyQueue = { model, name: this.conn.names.listenerQueue('reply', randomUUID()) };
        const queue = this.replyQueue.name;
        // Exclusive, not auto-delete: it outlives this channel (a re-opened consumer finds the replies sent
        // meanwhile) and goes with the connection.
        await ch.assertQueue(queue, { exclusive: true, autoDelete: false, durable: false });
        const { consumerTag } = await ch.consume(queue, (msg) => (msg === null ? this.repliesCancelled(reg, ch) : this.onReply(msg)), { noAck: true });
        return consumerTag;
      },
    });
    this.replies = reg;
    const registering = this.consumers.register(reg).catch((err: unknown) => {
      // Every request retries it: one line a minute, whatever the rate (e.g. definitions without P.reply.*).
      this.refusedLog.warn('reply queue', `bus: could not open the reply queue: ${describeError(err)}`);
      if (this.replies === reg) this.replies = null;
      if (this.registeringReplies === registering) this.registeringReplies = null;
    });
    this.registeringReplies = registering;
    return registering;
  }

  /** The reply queue was deleted: the replies on their way to it are lost (502), and the next consumer gets a new one. */
  private repliesCancelled(reg: Registration, ch: Channel): void {
    this.replyQueue = null;
    this.pending.failAll((p) => badGateway(p.service));
    this.consumers.brokerCancelled(reg, ch);
  }

  request(message: RequestMessage, timeoutMs: number): Promise<Reply> {
    if (this.conn.state() !== 'up') return Promise.reject(busNotConnected(message.targetService));
    if (AmqpPublisher.ready(this.replies) && this.replyQueue) return this.send(message, timeoutMs);
    return this.openReplies().then(() => this.send(message, timeoutMs));
  }

  private send(message: RequestMessage, timeoutMs: number): Promise<Reply> {
    const service = message.targetService;
    const ch = AmqpPublisher.ready(this.requests);
    const replyTo = AmqpPublisher.ready(this.replies) && this.replyQueue?.name;
    if (this.conn.state() !== 'up' || !ch || !replyTo) return Promise.reject(busNotConnected(service));
    let body: Buffer;
    let headers: Record<string, string>;
    try {
      body = encodeJson({ input: message.input });
      headers = encodeHeaders(message.headers);
    } catch {
      return Promise.reject(notEncodable());
    }
    // A whole number of ms that the timer and RabbitMQ's expiration both take as it is.
    const wait = waitMs(timeoutMs);
    const id = newId();
    return new Promise<Reply>((resolve, reject) => {
      this.pending.add(id, { service, correlationId: String(message.headers.correlationId ?? ''), timeoutMs, resolve, reject });
      try {
        // No confirm: a lost or dropped request ends at its deadline (504); an unroutable one comes back (basic.return, 503).
        ch.publish(this.requestExchange, service, body, {
          mandatory: true,
          expiration: String(wait),
          type: message.messageType,
          correlationId: id,
          replyTo,
          contentType: JSON_TYPE,
          headers,
          // Services accept requests from the gateway's broker user only (serve's acceptRequestsFrom).
          userId: this.brokerUser,
        });
      } catch (err) {
        const closed = err instanceof Error && err.name === 'IllegalOperationError';
        this.pending.take(id)?.reject(closed ? busNotConnected(service) : notEncodable());
      }
    });
  }

  /** basic.return: no queue is bound for the service (mandatory publish). */
  private onReturn(msg: Message): void {
    const p = this.pending.take(msg.properties.correlationId as string | undefined);
    if (p) p.reject(noInstance(p.service));
  }

  private onReply(msg: ConsumeMessage): void {
    const id = msg.properties.correlationId as string | undefined;
    const waiting = this.pending.get(id);
    if (!waiting) return; // late (after the deadline) or unknown: dropped
    const expected = this.check.replyUser?.(waiting.service);
    if (expected !== undefined && msg.properties.userId !== expected) return this.refuseReply(waiting.service, expected, msg);
    const p = this.pending.take(id) as AmqpPendingRequest;
    const max = this.check.maxBytes ?? DEFAULT_MAX_REPLY_BYTES;
    if (msg.content.length > max) {
      this.refusedLog.warn(JSON.stringify(['size', p.service]), `[${p.correlationId}] bus: a reply from service '${p.service}' of ${msg.content.length} bytes is over ${max} (maxReplyBytes); answered 502 unparsed`);
      p.reject(badGateway(p.service));
      return;
    }
    const reply = decodeReply(msg.content);
    if (!isReply(reply)) {
      this.conn.logger.error(`[${p.correlationId}] bus: malformed reply from service '${p.service}'`);
      p.resolve(internalErrorReply());
      return;
    }
    p.resolve(reply);
  }

  /**
   * A reply that another broker user published (anyone may publish to the reply queue through the default
   * exchange): dropped, and the request keeps waiting for its service's own reply.
   */
  private refuseReply(service: string, expected: string, msg: ConsumeMessage): void {
    const user = typeof msg.properties.userId === 'string' ? msg.properties.userId : undefined;
    const who = user === undefined ? 'no broker user (user_id)' : `broker user ${inert(user)}`;
    this.refusedLog.warn(JSON.stringify([service, user]), `bus: dropped a reply for ${service} published by ${who} (expected ${expected})`);
    this.check.onRefusedReply?.(service);
  }

  async requestDiscovery(): Promise<void> {
    await this.publishConfirmed(this.discoveryExchange, DISCOVER_KEY, encodeJson({}));
  }

  /** With the broker user as `user_id`, so a gateway that requires it can tell who announced. */
  async announce(announcement: Announcement): Promise<void> {
    await this.publishConfirmed(this.discoveryExchange, announceKey(announcement.service), encodeJson(announcement), this.brokerUser);
  }

  private publishConfirmed(exchange: string, routingKey: string, body: Buffer, userId?: string): Promise<void> {
    const ch = AmqpPublisher.ready<ConfirmChannel>(this.confirms);
    if (this.conn.state() !== 'up' || !ch) return Promise.reject(busNotConnected());
    return new Promise<void>((resolve, reject) => {
      try {
        ch.publish(exchange, routingKey, body, { contentType: JSON_TYPE, ...(userId !== undefined ? { userId } : {}) }, (err: unknown) => {
          if (err) reject(busRefused());
          else resolve();
        });
      } catch {
        reject(busNotConnected());
      }
    });
  }
}
