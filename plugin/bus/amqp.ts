import { createHash, randomUUID } from 'node:crypto';
import { newId } from '../request/ids';
import * as amqp from 'amqplib';
import type { Channel, ChannelModel, ConfirmChannel, ConsumeMessage, Message, RecoveringChannelModel } from 'amqplib';
import type { Announcement } from '../contracts/types';
import { badGateway, gatewayTimeout } from '../errors/gateway-error';
import { consoleLogger, type BusLogger } from './logger';
import { DEFAULT_PREFETCH, RETRY_FIRST_DELAY_MS, RETRY_MAX_DELAY_MS } from './constants';
import { internalErrorReply, isReply } from './envelope';
import { invokeHandler, replyJson } from './handler';
import { busClosing, busNotConnected, busRefused, noInstance, notEncodable } from './failures';
import { PendingRequests, type PendingRequest } from './pending';
import { describeError } from '../errors/describe';
import { OrphanedReplies, type RunningDelivery } from './orphaned-replies';
import { inert, OnceLog } from '../log-once';
import { ByteBudget } from './byte-budget';
import type {
  AnnouncementListener,
  MessageHeaders,
  MessageUser,
  Reply,
  RequestHandler,
  RequestMessage,
  Subscription,
  Transport,
  TransportState,
} from './transport';

/*
 * The AMQP 0-9-1 transport (RabbitMQ, amqplib). Wire format — what a service in another language
 * has to speak (every name starts with the configured prefix P):
 *
 *   exchange P.rpc        direct, durable   requests; routing key = target service
 *   queue    P.svc.<svc>  non-durable, not auto-delete, x-expires 15000; bound to P.rpc with key <svc>; the
 *                         service's instances are competing consumers on it (manual ack after the reply,
 *                         prefetch); what a consumer held when it died is redelivered (`redelivered` set)
 *   exchange P.discovery  topic, durable    announcements and withdrawals: key `announce.<service>`,
 *                                           body = the Announcement JSON; discovery requests: key
 *                                           `discover`, body `{}`. Listeners bind exclusive queues
 *                                           P.announce.<uuid> (`announce.#`) / P.discover.<uuid>.
 *
 * A request message: body = JSON `{ "input": {...} }` (the rest of the RequestMessage travels in
 * properties); properties: type = messageType, correlationId = a fresh id per request (NOT the trace
 * correlation id), replyTo = amq.rabbitmq.reply-to (direct reply-to), expiration = the timeout in ms,
 * contentType = application/json, mandatory; headers: correlationId, requestId, user (the
 * MessageUser as a JSON string, absent for anonymous calls), traceparent (when present), deadline (ms since
 * the epoch, as a decimal string), idempotencyKey (the caller's Idempotency-Key, when it sent one on a command
 * or POST), clientAddress (the caller's IP as the host saw it).
 * The reply: published to the default exchange with routing key = the request's replyTo, the same
 * correlationId, body = the Reply envelope as JSON; the service acks the request after replying.
 */

const REPLY_TO = 'amq.rabbitmq.reply-to';
/** How long a work queue outlives its last consumer (x-expires): a reconnect or a restart finds its requests there. */
export const WORK_QUEUE_EXPIRES_MS = 15_000;
/**
 * The work queue of a service: not auto-delete, so the requests a consumer held when its connection dropped or its
 * process died are requeued and redelivered (to another instance, or to the same one once it is back) rather than
 * dropped with the queue; the broker deletes it once it has had no consumer for WORK_QUEUE_EXPIRES_MS. Not durable:
 * the requests are transient and their direct reply-to does not survive a broker restart either.
 */
const WORK_QUEUE_OPTIONS: amqp.Options.AssertQueue = { durable: false, autoDelete: false, arguments: { 'x-expires': WORK_QUEUE_EXPIRES_MS } };
/** AMQP reply code of a declaration whose arguments differ from the existing entity's. */
const PRECONDITION_FAILED = 406;
const JSON_TYPE = 'application/json';
const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;

export interface AmqpTransportOptions {
  /** Prefix of every exchange and queue name, so several deployments (or test runs) can share a broker. */
  prefix: string;
  logger?: BusLogger;
  /** How long start() waits for the first connection before it gives up. Default 10 s. */
  connectTimeoutMs?: number;
  /** Reconnect backoff: first delay (default 100 ms, jittered ±20%) and cap (default 5 s). */
  reconnect?: { initialDelayMs?: number; maxDelayMs?: number };
  /** Gateway side: bounds on the announcements it takes off the bus. */
  announcements?: Partial<AnnouncementIntake>;
}

/** How much announcement traffic the gateway takes in. */
export interface AnnouncementIntake {
  /** A larger message is dropped unparsed. */
  maxBytes: number;
  /** Announcement bytes handled per second; beyond it the broker holds (and at its cap drops the oldest of) the rest. */
  bytesPerSecond: number;
}

export const DEFAULT_ANNOUNCEMENT_INTAKE: Readonly<AnnouncementIntake> = Object.freeze({ maxBytes: 256 * 1024, bytesPerSecond: 4 * 1024 * 1024 });
/** Announcements in hand at once (unacked). */
const ANNOUNCE_PREFETCH = 64;
/** The broker keeps at most this much of a flood for the gateway; the oldest go first. */
const ANNOUNCE_QUEUE_ARGS = { 'x-max-length': 10_000, 'x-max-length-bytes': 32 * 1024 * 1024, 'x-overflow': 'drop-head' };

interface AmqpPendingRequest extends PendingRequest {
  /** The request's trace id, for the log lines about it. */
  correlationId: string;
}

/** A consumer registered through serve/onAnnouncement/onDiscoveryRequest; re-created after every reconnect. */
interface Registration {
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

const noop = (): void => undefined;

/** The URL without credentials, for messages and logs. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    u.username = '';
    u.password = '';
    return u.toString();
  } catch {
    return 'the configured BUS_URL';
  }
}

/** The user name of an amqp:// URL, if it names one (amqplib's default, guest, is not assumed: EXTERNAL auth differs). */
function urlUser(url: string): string | undefined {
  try {
    const user = decodeURIComponent(new URL(url).username);
    return user === '' ? undefined : user;
  } catch {
    return undefined;
  }
}

/** The correlation id a request message carries, for service-side log lines (bounded and inert: it came off the wire). */
function traceIdOf(msg: ConsumeMessage): string {
  return (headerString((msg.properties.headers ?? {}).correlationId) ?? '').slice(0, 128).replace(/[^A-Za-z0-9._:-]/g, '?');
}

function headerString(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (Buffer.isBuffer(value)) return value.toString('utf8');
  return undefined;
}

/** The user header's JSON, made once per cached (frozen) user rather than on each of its requests. */
const userJson = new WeakMap<object, string>();

function userHeader(user: object): string {
  if (!Object.isFrozen(user)) return JSON.stringify(user);
  let json = userJson.get(user);
  if (json === undefined) userJson.set(user, (json = JSON.stringify(user)));
  return json;
}

/** The gateway's two publishing channels (see AmqpTransport.pub). */
interface Publisher {
  rpc: Channel;
  confirm: ConfirmChannel;
}

/** Closes channels that may already be closed or closing. */
function closeQuietly(...channels: Array<Channel | undefined>): Promise<unknown> {
  return Promise.all(channels.map((ch) => ch?.close().catch(noop)));
}

function encodeJson(value: unknown): Buffer {
  return Buffer.from(JSON.stringify(value), 'utf8');
}

export class AmqpTransport implements Transport {
  readonly kind = 'amqp' as const;
  private current: TransportState = 'connecting';
  private readonly stateListeners: Array<(state: TransportState) => void> = [];
  private readonly logger: BusLogger;
  private readonly prefix: string;
  private readonly rpcExchange: string;
  private readonly discoveryExchange: string;
  private readonly connectTimeoutMs: number;
  private readonly initialDelayMs: number;
  private readonly maxDelayMs: number;

  private recovering: RecoveringChannelModel | null = null;
  /** The live connection; null while down. */
  private conn: ChannelModel | null = null;
  /**
   * The publisher: requests go out on a plain channel that also consumes direct reply-to (the reply is the
   * request's acknowledgement; publisher confirms on it cost the broker and the gateway a frame per request and
   * only turned a rare broker nack from a timeout into a 503). Announcements and discovery requests, which have
   * no reply, go out on a confirm channel. The two live and die together.
   */
  private pub: Publisher | null = null;
  private pubRetryTimer: NodeJS.Timeout | null = null;
  private pubFailures = 0;
  private readonly pending = new PendingRequests<AmqpPendingRequest>();
  private readonly registrations = new Set<Registration>();
  private starting: Promise<void> | null = null;
  private closing: Promise<void> | null = null;
  private lastConnectError: Error | null = null;
  /** Whether a connect failure was logged since the last successful connection. */
  private connectFailureLogged = false;
  private readonly announcements: AnnouncementIntake;
  /** The connection whose broker user may not declare the exchanges (checked to exist by ensureExchanges). */
  private exchangesGivenOn: ChannelModel | null = null;
  /** The broker user of the URL, stamped on announcements as `user_id` (RabbitMQ checks it is the connection's). */
  private readonly brokerUser: string | undefined;
  /** Dropped announcements: one line per sender and reason per minute, whatever the rate they come at. */
  private readonly droppedLog: OnceLog;

  constructor(
    private readonly url: string,
    opts: AmqpTransportOptions,
  ) {
    if (!opts || typeof opts.prefix !== 'string' || opts.prefix === '') throw new Error('AmqpTransport needs a non-empty prefix');
    this.prefix = opts.prefix;
    this.logger = opts.logger ?? consoleLogger;
    this.rpcExchange = `${this.prefix}.rpc`;
    this.discoveryExchange = `${this.prefix}.discovery`;
    this.connectTimeoutMs = opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    this.initialDelayMs = opts.reconnect?.initialDelayMs ?? RETRY_FIRST_DELAY_MS;
    this.maxDelayMs = opts.reconnect?.maxDelayMs ?? RETRY_MAX_DELAY_MS;
    this.announcements = { ...DEFAULT_ANNOUNCEMENT_INTAKE, ...opts.announcements };
    this.droppedLog = new OnceLog(this.logger);
    this.brokerUser = urlUser(url);
  }

  /** The name of the work queue of `service`. */
  serviceQueue(service: string): string {
    return `${this.prefix}.svc.${service}`;
  }

  state(): TransportState {
    return this.current;
  }

  /** A driver message with the URL's password taken out (belt and braces: amqplib does not echo it). */
  private scrub(message: string): string {
    let password = '';
    try {
      password = decodeURIComponent(new URL(this.url).password);
    } catch {
      // an unparsable URL fails to connect before any message could carry it
    }
    return password.length >= 3 ? message.split(password).join('***') : message;
  }

  onStateChange(listener: (state: TransportState) => void): void {
    this.stateListeners.push(listener);
  }

  private setState(next: TransportState): void {
    if (this.current === next || this.current === 'closed') return;
    this.current = next;
    this.logger.info(`bus: ${next}`);
    for (const listener of [...this.stateListeners]) {
      try {
        listener(next);
      } catch (err) {
        this.logger.error(`bus: state listener failed: ${describeError(err)}`);
      }
    }
  }

  // ---------------------------------------------------------------- connection

  start(): Promise<void> {
    if (this.closing) return Promise.reject(new Error('The transport is closed'));
    if (!this.starting) {
      this.starting = this.connectFirst();
      this.starting.catch(() => {
        this.starting = null; // a failed start may be retried
      });
    }
    return this.starting;
  }

  private async connectFirst(): Promise<void> {
    // amqplib's own recovery: it reconnects with jittered exponential backoff and runs `setup` on every
    // new connection before reporting it; we re-declare the topology and every consumer there.
    const recovering = await amqp.connect(this.url, {
      noDelay: true, // amqplib leaves Nagle on; replies would stall for ~40 ms
      timeout: Math.min(this.connectTimeoutMs, 5_000),
      recovery: {
        initialDelay: this.initialDelayMs,
        maxDelay: this.maxDelayMs,
        factor: 2,
        jitter: 0.2,
        waitForConnect: false,
        setup: (model: ChannelModel) => this.setup(model),
      },
    });
    if (this.closing) {
      await recovering.close().catch(noop);
      throw new Error('The transport was closed while connecting');
    }
    this.recovering = recovering;
    recovering.on('connect', () => {
      this.connectFailureLogged = false;
      if (!this.closing) this.setState('up');
    });
    recovering.on('connect-failed', (err: Error) => {
      this.lastConnectError = err;
      // amqplib retries every few hundred ms: the first failure is logged; later ones are summed up by the
      // caller's retry line (it names the last reason), not logged at every attempt.
      if (this.connectFailureLogged) return;
      this.connectFailureLogged = true;
      this.logger.warn(`bus: connecting to ${redactUrl(this.url)} failed: ${this.scrub(err.message)}`);
    });
    recovering.on('disconnect', (err: Error) => this.logger.warn(`bus: connection lost: ${this.scrub(err.message)}`));
    recovering.on('reconnect-failed', (err: Error) => this.logger.error(`bus: gave up reconnecting: ${this.scrub(err.message)}`));
    recovering.on('error', (err: Error) => this.logger.warn(`bus: connection error: ${this.scrub(err.message)}`));
    recovering.on('handler-error', (err: Error) => this.logger.error(`bus: ${describeError(err)}`));

    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => {
        const cause = this.lastConnectError ? `: ${this.scrub(this.lastConnectError.message)}` : '';
        reject(new Error(`Could not connect to the message bus at ${redactUrl(this.url)} within ${this.connectTimeoutMs} ms${cause}`));
      }, this.connectTimeoutMs);
    });
    try {
      await Promise.race([recovering.waitForConnect(), timedOut]);
    } catch (err) {
      this.recovering = null;
      await recovering.close().catch(noop);
      if (!this.closing) this.setState('down');
      throw err instanceof Error && err.message.startsWith('Could not connect') ? err : new Error(`Could not connect to the message bus at ${redactUrl(this.url)}`);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Runs on every new connection, before it counts as up. Throwing makes amqplib drop it and retry. */
  private async setup(model: ChannelModel): Promise<void> {
    model.on('error', (err: Error) => this.logger.warn(`bus: connection error: ${this.scrub(err.message)}`));
    if (this.closing) throw new Error('The transport is closing');
    model.once('close', () => this.onConnectionLost(model));
    this.conn = model;
    this.pubFailures = 0;
    await this.ensureExchanges(model);
    await this.openPublisher(model);
    // A Set iterates over members added while we await, so a serve() racing with setup is covered.
    for (const reg of this.registrations) {
      try {
        await this.openRegistration(reg, model);
      } catch (err) {
        if (this.conn !== model) throw err;
        // A channel-level problem of one consumer must not keep the whole connection down.
        this.logger.warn(`bus: could not start ${reg.label}: ${describeError(err)}`);
        this.scheduleReopen(reg, model);
      }
    }
    if (this.conn !== model) throw new Error('The connection was lost during setup');
  }

  private onConnectionLost(model: ChannelModel): void {
    if (this.conn !== model) return;
    this.conn = null;
    this.pub = null;
    if (this.pubRetryTimer) clearTimeout(this.pubRetryTimer);
    this.pubRetryTimer = null;
    for (const reg of this.registrations) {
      if (reg.model === model) this.resetRegistration(reg);
    }
    this.pending.failAll((p) => badGateway(p.service));
    if (!this.closing && this.current === 'up') this.setState('down');
  }

  abortPending(error: () => Error): void {
    this.pending.failAll(error);
  }

  close(): Promise<void> {
    if (!this.closing) this.closing = this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    this.setState('closed');
    if (this.pubRetryTimer) clearTimeout(this.pubRetryTimer);
    this.pubRetryTimer = null;
    this.pending.failAll((p) => busClosing(p.service));
    await Promise.all([...this.registrations].map((reg) => this.closeRegistration(reg)));
    const pub = this.pub;
    this.pub = null;
    if (pub) await closeQuietly(pub.rpc, pub.confirm);
    const recovering = this.recovering;
    this.recovering = null;
    if (recovering) await recovering.close().catch(noop);
    this.conn = null;
  }

  // ---------------------------------------------------------------- publisher (gateway side)

  private async openPublisher(model: ChannelModel): Promise<void> {
    // Set once both channels are ready; a close before that is handled by the failure path below.
    let publisher: Publisher | undefined;
    const onClosed = (): void => {
      if (publisher) this.onPublisherClosed(publisher, model);
    };
    const rpc = await model.createChannel();
    this.watchChannel(rpc, 'publisher channel', onClosed);
    rpc.on('return', (msg: Message) => this.onReturn(msg));
    let confirm: ConfirmChannel | undefined;
    try {
      confirm = await model.createConfirmChannel();
      this.watchChannel(confirm, 'announcement channel', onClosed);
      await this.declareExchanges(rpc);
      await rpc.consume(REPLY_TO, (msg) => msg && this.onReply(msg), { noAck: true });
    } catch (err) {
      await closeQuietly(rpc, confirm);
      throw err;
    }
    if (this.conn !== model || this.closing) {
      await closeQuietly(rpc, confirm);
      return;
    }
    publisher = { rpc, confirm };
    this.pub = publisher;
    this.pubFailures = 0;
  }

  private onPublisherClosed(publisher: Publisher, model: ChannelModel): void {
    if (this.pub !== publisher) return;
    this.pub = null;
    // Either channel gone: close its twin, so both are re-opened together.
    void closeQuietly(publisher.rpc, publisher.confirm);
    // Replies come back on the rpc channel: whatever is in flight can no longer be answered.
    this.pending.failAll((p) => badGateway(p.service));
    // If the whole connection is going down, onConnectionLost follows and the timer finds nothing to do.
    this.schedulePublisherReopen(model);
  }

  /** The broker closed the publisher channel (e.g. a publish to a deleted exchange); the connection may be fine. */
  private schedulePublisherReopen(model: ChannelModel): void {
    if (this.closing || this.conn !== model || this.pubRetryTimer) return;
    const delay = Math.min(RETRY_MAX_DELAY_MS, RETRY_FIRST_DELAY_MS * 2 ** this.pubFailures++);
    this.pubRetryTimer = setTimeout(() => {
      this.pubRetryTimer = null;
      if (this.closing || this.conn !== model || this.pub) return;
      this.openPublisher(model).catch((err) => {
        this.logger.warn(`bus: could not re-open the publisher channel: ${describeError(err)}`);
        this.schedulePublisherReopen(model);
      });
    }, delay);
  }

  private async declareExchanges(ch: Channel): Promise<void> {
    // A user that may not declare them (see ensureExchanges) uses them as the broker has them.
    if (this.exchangesGivenOn !== null && this.exchangesGivenOn === this.conn) return;
    await ch.assertExchange(this.rpcExchange, 'direct', { durable: true });
    await ch.assertExchange(this.discoveryExchange, 'topic', { durable: true });
  }

  /**
   * Once per connection, on channels of its own: declares the exchanges, or, when the broker user may not (a
   * per-service user of docs/operations.md, whose exchanges come with the broker definitions), checks that they
   * are there; then the consumers' channels do not declare them on this connection.
   */
  private async ensureExchanges(model: ChannelModel): Promise<void> {
    const attempt = async (declare: boolean): Promise<void> => {
      const ch = await model.createChannel();
      ch.on('error', noop);
      try {
        if (declare) {
          await ch.assertExchange(this.rpcExchange, 'direct', { durable: true });
          await ch.assertExchange(this.discoveryExchange, 'topic', { durable: true });
        } else {
          await ch.checkExchange(this.rpcExchange);
          await ch.checkExchange(this.discoveryExchange);
        }
      } finally {
        await ch.close().catch(noop);
      }
    };
    try {
      await attempt(true);
    } catch (err) {
      if (!/ACCESS.REFUSED/i.test(describeError(err))) throw err;
      await attempt(false);
      this.exchangesGivenOn = model;
    }
  }

  private watchChannel(ch: Channel, label: string, onClose: () => void): void {
    ch.on('error', (err: Error) => {
      this.logger.warn(`bus: ${label} error: ${err.message}`);
    });
    ch.on('handler-error', (err: Error) => this.logger.error(`bus: ${label}: ${describeError(err)}`));
    ch.on('close', onClose);
  }

  /** A request's deadline passed with no reply: 504. One function for every request's timer (no closure each). */
  private readonly onDeadline = (id: string, timeoutMs: number): void => {
    this.pending.take(id)?.reject(gatewayTimeout(timeoutMs));
  };

  request(message: RequestMessage, timeoutMs: number): Promise<Reply> {
    const service = message.targetService;
    const ch = this.pub?.rpc;
    if (this.current !== 'up' || !ch) {
      return Promise.reject(busNotConnected(service));
    }
    let body: Buffer;
    const headers: Record<string, string> = {};
    try {
      body = encodeJson({ input: message.input });
      const h: MessageHeaders = message.headers;
      headers.correlationId = String(h.correlationId ?? '');
      headers.requestId = String(h.requestId ?? '');
      if (h.user) headers.user = userHeader(h.user);
      if (h.traceparent) headers.traceparent = h.traceparent;
      if (h.deadline) headers.deadline = String(h.deadline);
      if (h.idempotencyKey) headers.idempotencyKey = h.idempotencyKey;
      if (h.clientAddress) headers.clientAddress = h.clientAddress;
    } catch {
      return Promise.reject(notEncodable());
    }
    const deadline = Math.max(1, Math.ceil(Number.isFinite(timeoutMs) ? timeoutMs : 1));
    const id = newId();
    return new Promise<Reply>((resolve, reject) => {
      const timer = setTimeout(this.onDeadline, deadline, id, timeoutMs);
      this.pending.add(id, { service, correlationId: String(message.headers.correlationId ?? ''), timer, resolve, reject });
      try {
        // No confirm: a lost or dropped request ends at its deadline (504); an unroutable one comes back (basic.return, 503).
        ch.publish(
          this.rpcExchange,
          service,
          body,
          {
            mandatory: true,
            expiration: String(deadline),
            type: message.messageType,
            correlationId: id,
            replyTo: REPLY_TO,
            contentType: JSON_TYPE,
            headers,
            // Services may accept requests from the gateway's broker user only (serve's acceptRequestsFrom).
            userId: this.brokerUser,
          },
        );
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
    const p = this.pending.take(msg.properties.correlationId as string | undefined);
    if (!p) return; // late (after the deadline) or unknown: dropped
    let reply: unknown;
    try {
      reply = JSON.parse(msg.content.toString('utf8'));
    } catch {
      reply = undefined;
    }
    if (!isReply(reply)) {
      this.logger.error(`[${p.correlationId}] bus: malformed reply from service '${p.service}'`);
      p.resolve(internalErrorReply());
      return;
    }
    p.resolve(reply);
  }

  async requestDiscovery(): Promise<void> {
    await this.publishConfirmed(this.discoveryExchange, 'discover', encodeJson({}));
  }

  /** With the broker user as `user_id`, so a gateway that requires it can tell who announced. */
  async announce(announcement: Announcement): Promise<void> {
    await this.publishConfirmed(this.discoveryExchange, `announce.${announcement.service}`, encodeJson(announcement), this.brokerUser);
  }

  private publishConfirmed(exchange: string, routingKey: string, body: Buffer, userId?: string): Promise<void> {
    const ch = this.pub?.confirm;
    if (this.current !== 'up' || !ch) return Promise.reject(busNotConnected());
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

  // ---------------------------------------------------------------- consumers (service side, listeners)

  async serve(service: string, handler: RequestHandler, opts: { prefetch?: number } = {}): Promise<Subscription> {
    const queue = this.serviceQueue(service);
    const reg = this.newRegistration(`consumer of ${queue}`, {
      prefetch: Math.max(1, opts.prefetch ?? DEFAULT_PREFETCH),
      attach: async (ch) => {
        await this.declareExchanges(ch);
        await this.declareWorkQueue(ch, reg, queue);
        await ch.bindQueue(queue, this.rpcExchange, service);
        const { consumerTag } = await ch.consume(queue, (msg) => this.onWork(reg, ch, service, handler, msg), {
          noAck: false,
        });
        return consumerTag;
      },
      // The last instance to stop deletes the queue (only if no other instance consumes), so the service is
      // unroutable — 503 — as soon as close() resolves rather than when the queue expires.
      detach: async (ch) => {
        await ch.deleteQueue(queue, { ifUnused: true });
      },
    });
    return this.register(reg);
  }

  /**
   * Declares the work queue (WORK_QUEUE_OPTIONS). A queue of the same name declared with other arguments — by an
   * instance of an older version (auto-delete), during a rolling upgrade — closes the declaring channel with
   * PRECONDITION_FAILED; the declaration is tried on a channel of its own so that this instance can still consume
   * the existing queue as it is.
   */
  private async declareWorkQueue(ch: Channel, reg: Registration, queue: string): Promise<void> {
    const model = reg.model;
    if (!model) throw new Error('The connection was lost');
    const probe = await model.createChannel();
    probe.on('error', noop);
    try {
      await probe.assertQueue(queue, WORK_QUEUE_OPTIONS);
    } catch (err) {
      if ((err as { code?: unknown }).code !== PRECONDITION_FAILED) throw err;
      await ch.checkQueue(queue);
      this.logger.warn(`bus: ${queue} exists with other arguments (an older instance declared it); consuming it as it is`);
    } finally {
      await probe.close().catch(noop);
    }
  }

  private onWork(
    reg: Registration,
    ch: Channel,
    service: string,
    handler: RequestHandler,
    msg: ConsumeMessage | null,
  ): void {
    if (msg === null) {
      this.onBrokerCancel(reg, ch);
      return;
    }
    // A redelivery of a request this instance is running (or ran) on a channel that died gets that run's reply.
    const reply = (msg.fields.redelivered && reg.orphans.take(msg)) || this.replyBody(msg, service, handler);
    const id = msg.properties.correlationId as string | undefined;
    if (id !== undefined) reg.running.set(id, { type: msg.properties.type, content: msg.content, reply });
    const work = reply.then((body) => {
      // Only this delivery's entry: after a reconnect the same id may be running again as its redelivery.
      if (id !== undefined && reg.running.get(id)?.reply === reply && reg.ch === ch) reg.running.delete(id);
      try {
        const replyTo = msg.properties.replyTo as string | undefined;
        if (replyTo) {
          ch.sendToQueue(replyTo, body, { correlationId: msg.properties.correlationId, contentType: JSON_TYPE });
        }
        ch.ack(msg);
      } catch (err) {
        // The channel went away while the handler ran; the broker redelivers the request (see OrphanedReplies).
        this.logger.warn(`[${traceIdOf(msg)}] bus: could not reply to ${service}/${msg.properties.type}: ${describeError(err)}`);
      }
    });
    reg.inflight.add(work);
    void work.finally(() => reg.inflight.delete(work));
  }

  /** Runs the handler; settles with the reply as the JSON body to send. */
  private async replyBody(msg: ConsumeMessage, service: string, handler: RequestHandler): Promise<Buffer> {
    const request = this.decodeRequest(msg, service);
    const reply: Reply = request
      ? await invokeHandler(handler, request, this.logger)
      : { ok: false, error: { code: 'BAD_REQUEST', message: 'Malformed request message' } };
    return Buffer.from(replyJson(reply, this.logger, traceIdOf, msg, service, msg.properties.type), 'utf8');
  }

  private decodeRequest(msg: ConsumeMessage, service: string): RequestMessage | null {
    let body: unknown;
    try {
      body = JSON.parse(msg.content.toString('utf8'));
    } catch {
      return null;
    }
    if (!body || typeof body !== 'object' || Array.isArray(body)) return null;
    const input = (body as { input?: unknown }).input ?? {};
    if (!input || typeof input !== 'object' || Array.isArray(input)) return null;
    const raw = (msg.properties.headers ?? {}) as Record<string, unknown>;
    const headers: MessageHeaders = {
      correlationId: headerString(raw.correlationId) ?? '',
      requestId: headerString(raw.requestId) ?? '',
    };
    const user = headerString(raw.user);
    if (user !== undefined) {
      try {
        const parsed: unknown = JSON.parse(user);
        if (!parsed || typeof parsed !== 'object') return null;
        headers.user = parsed as MessageUser;
      } catch {
        return null;
      }
    }
    const traceparent = headerString(raw.traceparent);
    if (traceparent !== undefined) headers.traceparent = traceparent;
    const deadline = Number(headerString(raw.deadline));
    if (Number.isSafeInteger(deadline)) headers.deadline = deadline;
    const idempotencyKey = headerString(raw.idempotencyKey);
    if (idempotencyKey !== undefined) headers.idempotencyKey = idempotencyKey;
    const clientAddress = headerString(raw.clientAddress);
    if (clientAddress !== undefined) headers.clientAddress = clientAddress;
    const request: RequestMessage = {
      messageType: String(msg.properties.type ?? ''),
      targetService: service,
      input: input as Record<string, unknown>,
      headers,
    };
    if (msg.fields.redelivered) request.redelivered = true;
    if (typeof msg.properties.userId === 'string') request.publisher = msg.properties.userId;
    return request;
  }

  async onAnnouncement(listener: AnnouncementListener): Promise<Subscription> {
    const budget = new ByteBudget(this.announcements.bytesPerSecond);
    const reg: Registration = this.newRegistration('announcement listener', {
      prefetch: ANNOUNCE_PREFETCH,
      attach: (ch) =>
        this.attachListener(ch, 'announce', 'announce.#', (msg) => {
          if (msg === null) return this.onBrokerCancel(reg, ch);
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
    return this.register(reg);
  }

  /**
   * One announcement off the bus, checked before anything else: its size (before parsing), that it is an object
   * naming a service, and that the service is the one in its routing key `announce.<service>` (which topic
   * permissions tie to the service's broker user). The rest of the checks are the registry's.
   */
  private onAnnouncementMessage(msg: ConsumeMessage, listener: AnnouncementListener): void {
    const routingKey = msg.fields.routingKey;
    const keyService = routingKey.startsWith('announce.') ? routingKey.slice('announce.'.length) : '';
    const userId = typeof msg.properties.userId === 'string' ? msg.properties.userId : undefined;
    const from = `routing key ${inert(routingKey)}${userId !== undefined ? `, broker user ${inert(userId)}` : ''}`;
    const drop = (reason: string): void => this.droppedLog.warn(JSON.stringify([routingKey, userId, reason]), `bus: dropped an announcement (${from}): ${reason}`);
    const max = this.announcements.maxBytes;
    if (msg.content.length > max) return drop(`${msg.content.length} bytes, over ${max} (announcementMaxBytes)`);
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
    try {
      const digest = createHash('sha1').update(msg.content).digest('base64');
      listener(announcement as Announcement, userId !== undefined ? { userId, digest } : { digest });
    } catch (err) {
      this.logger.error(`bus: announcement listener failed: ${describeError(err)}`);
    }
  }

  async onDiscoveryRequest(listener: () => void): Promise<Subscription> {
    const reg: Registration = this.newRegistration('discovery listener', {
      attach: (ch) =>
        this.attachListener(ch, 'discover', 'discover', (msg) => {
          if (msg === null) return this.onBrokerCancel(reg, ch);
          try {
            listener();
          } catch (err) {
            this.logger.error(`bus: discovery listener failed: ${describeError(err)}`);
          }
        }),
    });
    return this.register(reg);
  }

  /**
   * An exclusive, auto-delete queue of this connection bound to the discovery exchange. With `queueArgs` (the
   * announcement queue) messages are acked by the consumer; without, auto-acked.
   */
  private async attachListener(
    ch: Channel,
    kind: string,
    bindingKey: string,
    onMessage: (msg: ConsumeMessage | null) => void,
    queueArgs?: Record<string, unknown>,
  ): Promise<string> {
    await this.declareExchanges(ch);
    const queue = `${this.prefix}.${kind}.${randomUUID()}`;
    await ch.assertQueue(queue, { exclusive: true, autoDelete: true, durable: false, ...(queueArgs ? { arguments: queueArgs } : {}) });
    await ch.bindQueue(queue, this.discoveryExchange, bindingKey);
    const { consumerTag } = await ch.consume(queue, onMessage, { noAck: queueArgs === undefined });
    return consumerTag;
  }

  private newRegistration(
    label: string,
    spec: Pick<Registration, 'attach'> & Partial<Pick<Registration, 'detach' | 'prefetch'>>,
  ): Registration {
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
  private async register(reg: Registration): Promise<Subscription> {
    if (this.closing) throw new Error('The transport is closed');
    this.registrations.add(reg);
    const model = this.conn;
    if (model) {
      try {
        await this.openRegistration(reg, model);
      } catch (err) {
        if (this.conn === model) {
          // The connection is fine: this consumer itself cannot be set up (e.g. a conflicting queue).
          this.registrations.delete(reg);
          reg.closed = true;
          throw err;
        }
        // The connection dropped meanwhile: the consumer starts with the next connection.
      }
    }
    // Not connected (yet): setup() opens it when the connection comes up.
    return { close: () => this.closeRegistration(reg) };
  }

  private openRegistration(reg: Registration, model: ChannelModel): Promise<void> {
    if (reg.closed || reg.model === model) return reg.opening ?? Promise.resolve();
    reg.model = model;
    const opening = this.doOpenRegistration(reg, model);
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

  private async doOpenRegistration(reg: Registration, model: ChannelModel): Promise<void> {
    let ch: Channel;
    try {
      ch = await model.createChannel();
    } catch (err) {
      if (reg.model === model) reg.model = null;
      throw err;
    }
    this.watchChannel(ch, reg.label, () => this.onRegistrationChannelClosed(reg, ch, model));
    try {
      if (reg.prefetch) await ch.prefetch(reg.prefetch);
      reg.ch = ch;
      const tag = await reg.attach(ch);
      if (reg.ch === ch) reg.tag = tag;
    } catch (err) {
      if (reg.ch === ch) this.resetRegistration(reg);
      await ch.close().catch(noop);
      throw err;
    }
    reg.failures = 0;
  }

  private resetRegistration(reg: Registration): void {
    // The channel is gone with what it was handling: the broker will redeliver those.
    reg.orphans.adopt(reg.running);
    reg.running.clear();
    reg.model = null;
    reg.ch = null;
    reg.tag = null;
  }

  private onRegistrationChannelClosed(reg: Registration, ch: Channel, model: ChannelModel): void {
    if (reg.ch !== ch) return;
    this.resetRegistration(reg);
    // If the whole connection is going down, onConnectionLost runs right after this and setup() of the
    // next connection re-opens the consumer; otherwise the broker closed just this channel.
    setImmediate(() => {
      if (this.conn === model) this.scheduleReopen(reg, model);
    });
  }

  private scheduleReopen(reg: Registration, model: ChannelModel): void {
    if (reg.closed || this.closing || reg.retryTimer) return;
    const delay = Math.min(RETRY_MAX_DELAY_MS, RETRY_FIRST_DELAY_MS * 2 ** reg.failures++);
    reg.retryTimer = setTimeout(() => {
      reg.retryTimer = null;
      if (reg.closed || this.closing || this.conn !== model || reg.model === model) return;
      this.openRegistration(reg, model).catch((err) => {
        this.logger.warn(`bus: could not re-open ${reg.label}: ${describeError(err)}`);
        if (this.conn === model) this.scheduleReopen(reg, model);
      });
    }, delay);
  }

  /**
   * The broker cancelled a consumer (its queue was deleted): amqplib hands the callback `null`. The
   * instance still wants to serve, so re-declare and consume again once the work in flight on the
   * channel has finished (its acks need the channel).
   */
  private onBrokerCancel(reg: Registration, ch: Channel): void {
    if (reg.ch !== ch || reg.closed) return;
    this.logger.warn(`bus: the broker cancelled the ${reg.label}; consuming again`);
    reg.tag = null;
    void Promise.allSettled([...reg.inflight]).then(() => {
      if (reg.ch !== ch || reg.closed || this.closing) return;
      // Closing the channel hands over to the regular re-open path (with backoff).
      return ch.close().catch(noop);
    });
  }

  private async closeRegistration(reg: Registration): Promise<void> {
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
    if (reg.detach && this.conn) await this.detachQuietly(reg.detach, this.conn);
    await Promise.allSettled([...reg.inflight]);
    this.resetRegistration(reg);
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
