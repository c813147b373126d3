import type { Channel, ChannelModel, ConfirmChannel, ConsumeMessage, Message } from 'amqplib';
import type { Announcement } from '../../contracts/types';
import { badGateway } from '../../errors/gateway-error';
import { inert, OnceLog } from '../../log-once';
import { newId } from '../../request/ids';
import { decodeReply, internalErrorReply, isReply, TOO_DEEP } from '../envelope';
import { DEFAULT_MAX_REPLY_BYTES, MAX_REPLY_DEPTH } from '../constants';
import {
  busBlocked,
  busChannelNotOpen,
  busClosing,
  busLostKeyed,
  busNotConnected,
  busRefused,
  noInstance,
  notEncodable,
} from '../failures';
import { PendingRequests, waitMs, type PendingRequest } from '../pending';
import type { Reply, RequestMessage } from '../transport';
import { noop } from '../../logger';
import type { AmqpConnection } from './connection';
import { readyChannel, type AmqpConsumers, type Registration } from './consumers';
import { CONFIRM_CHECK_MS, CONFIRM_STALL_MS, ConfirmWatches } from './confirm-stall';
import { hasInvalidHeaders } from './header-guard';
import { ReplyQueues } from './reply-queues';
import { ensureAnnounceExchange } from './service-exchanges';
import { announceKey, DISCOVER_KEY, encodeHeaders, encodeJson, JSON_TYPE } from './wire';

/** How often an announcing service makes sure of its announcement exchange and its binding again. */
const ANNOUNCE_TOPOLOGY_RECHECK_MS = 10_000;
/*
 * The gateway side of the AMQP transport: requests out and their replies back (with their deadlines, and
 * basic.return for a service nobody consumes), and the confirmed publishes that have no reply (announcements,
 * discovery requests). Each of its channels (requests, confirms, one reply consumer per service: reply-queues.ts)
 * lives on its own (consumers.ts re-opens it): a channel error on one request — the broker closes the channel it
 * came on — neither loses the replies in flight, which come back on other channels, nor stops the next requests for
 * longer than the channel takes to re-open.
 */

/** The error amqplib hands a confirm callback for a basic.nack (a closed channel gives 'channel closed'). */
const NACKED = 'message nacked';
/** A request channel the broker nacks is replaced at most this often. */
const NACKED_CHANNEL_REPLACE_MS = 1_000;
/**
 * Nacks in a row, no ack between, that make a request channel stuck. A queue that refuses one service's messages
 * (reject-publish: a service may bind one on its own key) nacks those only; the other services' requests on the
 * channel are acked between them, so the channel is kept.
 */
const NACKS_IN_A_ROW = 3;

interface AmqpPendingRequest extends PendingRequest {
  /** The request's trace id, for the log lines about it. */
  correlationId: string;
  /** Sent with an Idempotency-Key: safe to send again when its answer is lost. */
  keyed: boolean;
  /**
   * An unkeyed read (a query, get or list): its channel closed before the broker confirmed it, it goes out again on
   * the next channel; lost with its connection, it goes out once more unless `sentAgain`.
   */
  read?: RequestMessage;
  /** A read sent again already after its connection was lost. */
  sentAgain: boolean;
}

/** A read lost with its connection, waiting for the next one until its own deadline. */
interface ParkedRead {
  request: AmqpPendingRequest;
  message: RequestMessage;
  /** performance.now() past which it is answered 503 (the bus did not come back in time). */
  due: number;
}

/**
 * `work` on `model`, or false once the connection closes: amqplib may never settle a channel opened on a connection
 * that is closing (an announcement whose connection was cut meanwhile waited for ever in test/bus/amqp).
 */
function unlessClosed(model: ChannelModel, work: Promise<boolean>): Promise<boolean> {
  let onClose = noop;
  const closed = new Promise<boolean>((resolve) => {
    onClose = () => resolve(false);
    model.once('close', onClose);
  });
  return Promise.race([work, closed]).finally(() => model.removeListener('close', onClose));
}

/**
 * Reads change nothing, so sending one again after its answer was lost cannot run anything twice. Every read's
 * message type ends in Query (GetXQuery, ListXQuery, XQuery: contracts/derive-routes.ts), so the name says it; the
 * bus code does not import the route naming, which the SDK package does not ship.
 */
function isSafeRead(messageType: string): boolean {
  return messageType.endsWith('Query');
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
   * Requests go out on two confirm channels, one for those with an Idempotency-Key (their caller retries) and one
   * for the others. A request the broker does not take (a nack: e.g. a quorum queue without a leader, or over its
   * limits) is answered 503 at once rather than 504 at the deadline; a channel whose oldest request waits
   * CONFIRM_STALL_MS for its confirm is stuck (confirm-stall.ts) and replaced, and the reads on it go out again on
   * the new one. Announcements and discovery requests, which have no reply, go out on a confirm channel too.
   */
  private readonly requests: Registration;
  private readonly keyedRequests: Registration;
  private readonly confirms: Registration;
  /** The reply queues, one per target service: opened with the first request to it (a service's transport sends none). */
  private readonly replies: ReplyQueues;
  private readonly pending = new PendingRequests<AmqpPendingRequest>();
  /** Per request channel, the nacks since its last ack. */
  private readonly nacksInARow = new WeakMap<Channel, number>();
  /** When a request channel was last closed for a nack (Date.now()). */
  private nackReplacedAt = 0;
  /** The unconfirmed requests of each request channel, and the look at them every CONFIRM_CHECK_MS. */
  private readonly watches = new ConfirmWatches();
  private readonly stallTimer: NodeJS.Timeout;
  /** When a request channel was last found stuck (Date.now()); 0 once a request was confirmed since. */
  private stalledAt = 0;
  /** Reads lost with the last connection, sent again when the next one is up. */
  private parked: ParkedRead[] = [];
  private parkedTimer: NodeJS.Timeout | undefined;
  private readonly requestExchange: string;
  private readonly discoveryExchange: string;
  private readonly brokerUser: string | undefined;
  /** When each service's announcement exchange was last made sure of, per confirm channel. */
  private readonly announcesOn = new WeakMap<Channel, Map<string, number>>();
  /** Replies dropped for their publisher or for no request waiting (one line per service and kind per minute). */
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
    this.replies = new ReplyQueues(
      conn,
      consumers,
      (service, msg) => this.onReply(service, msg),
      (service) => this.repliesCancelled(service),
    );
    this.requests = consumers.create('request channel', { confirm: true, attach: this.attachRequests });
    this.keyedRequests = consumers.create('keyed request channel', { confirm: true, attach: this.attachRequests });
    this.confirms = consumers.create('announcement channel', {
      confirm: true,
      attach: async (ch) => {
        await this.conn.declareExchanges(ch);
        return '';
      },
    });
    // Registered before any consumer, so they open first on every connection (the connection is up only after).
    consumers.register(this.requests).catch(noop);
    consumers.register(this.keyedRequests).catch(noop);
    consumers.register(this.confirms).catch(noop);
    conn.onStateChange((state) => {
      if (state === 'up') this.resendParked();
    });
    this.stallTimer = setInterval(() => this.replaceStuckChannels(), CONFIRM_CHECK_MS);
    this.stallTimer.unref();
  }

  /** Both request channels, plain and confirming: unroutable requests come back on them (basic.return). */
  private readonly attachRequests = async (ch: Channel): Promise<string> => {
    ch.on('return', (msg: Message) => this.onReturn(msg));
    await this.conn.declareExchanges(ch);
    // Reads parked by a replaced channel go out on the new one once it is attached (below: after this returns).
    setImmediate(() => {
      if (this.conn.state() === 'up') this.resendParked();
    });
    return '';
  };

  /**
   * A request channel whose oldest request has waited CONFIRM_STALL_MS for its confirm is replaced by a new one at
   * once, and what waited on it is answered as for a closed channel (keyed 503, reads sent again). Not while the
   * connection is blocked (the broker then holds confirms on purpose).
   */
  private replaceStuckChannels(): void {
    if (this.conn.state() !== 'up') return;
    const now = Date.now();
    for (const reg of [this.requests, this.keyedRequests]) {
      const ch = readyChannel<ConfirmChannel>(reg);
      const waiting = ch && this.watches.stuck(ch, now);
      if (!ch || !waiting) continue;
      this.stalledAt = now;
      this.conn.logger.warn(
        `bus: the broker confirmed nothing on the ${reg.label} for ${CONFIRM_STALL_MS} ms: opening a new one`,
      );
      this.consumers.replaceChannel(reg);
      // Answered now as if the channel had closed (its confirms may not come before the broker answers the close).
      for (const id of waiting) {
        const p = this.pending.get(id);
        if (p) this.unconfirmed(id, p.service, new Error('channel closed'), ch);
      }
    }
  }

  /**
   * The connection is gone (closed, or dropped as silent), and with it the reply queues: whatever was in flight can
   * no longer be answered. Keyed: 503 with Retry-After, the key makes the retry safe; otherwise 502, the outcome is
   * unknown.
   */
  lost(): void {
    this.replies.lost();
    const now = performance.now();
    for (const p of this.pending.takeWhere((p) => p.read !== undefined && !p.sentAgain && p.due! > now))
      this.parked.push({ request: p, message: p.read!, due: p.due! });
    this.armParked();
    this.pending.failAll((p) => (p.keyed ? busLostKeyed(p.service) : badGateway(p.service)));
  }

  /**
   * Whether the broker has stopped confirming requests: from a stuck request channel until a request is confirmed
   * again, or for two stall periods after the last stuck one when no request was sent since. What stops the
   * gateway's requests stops the services' renewals too (a node of the cluster frozen), so leases are held meanwhile.
   */
  impaired(now = Date.now()): boolean {
    return this.stalledAt !== 0 && now - this.stalledAt < 2 * CONFIRM_STALL_MS;
  }

  /**
   * The next connection is up, or a replaced request channel is attached: each parked read goes out once more with
   * what is left of its deadline.
   */
  private resendParked(): void {
    if (readyChannel(this.requests) === undefined) return;
    const parked = this.parked;
    this.parked = [];
    this.armParked();
    const now = performance.now();
    for (const { request, message, due } of parked) {
      if (due <= now) {
        request.reject(busNotConnected(request.service));
        continue;
      }
      this.request(message, due - now, false).then(request.resolve, request.reject);
    }
  }

  /** Parked reads whose deadline passes before the bus is back are answered 503, like a request sent while down. */
  private armParked(): void {
    if (this.parkedTimer !== undefined) clearTimeout(this.parkedTimer);
    this.parkedTimer = undefined;
    if (this.parked.length === 0) return;
    const first = Math.min(...this.parked.map((r) => r.due));
    this.parkedTimer = setTimeout(
      () => {
        const now = performance.now();
        const late = this.parked.filter((r) => r.due <= now);
        this.parked = this.parked.filter((r) => r.due > now);
        this.armParked();
        for (const r of late) r.request.reject(busNotConnected(r.request.service));
      },
      Math.max(1, Math.ceil(first - performance.now())),
    );
  }

  private failParked(error: (p: AmqpPendingRequest) => Error): void {
    const parked = this.parked;
    this.parked = [];
    this.armParked();
    for (const r of parked) r.request.reject(error(r.request));
  }

  /** The first step of close(): the requests in flight are answered 503. */
  stop(): void {
    clearInterval(this.stallTimer);
    this.failParked((p) => busClosing(p.service));
    this.pending.failAll((p) => busClosing(p.service));
  }

  abortPending(error: () => Error): void {
    this.failParked(error);
    this.pending.failAll(error);
  }

  /** A reply queue was deleted: the replies on their way to it are lost (502), and its consumer gets a new one. */
  private repliesCancelled(service: string): void {
    this.pending.failWhere(
      (p) => p.service === service,
      (p) => badGateway(p.service),
    );
  }

  /** `resendable`: false for a read sent again already (it goes out twice at most). */
  request(message: RequestMessage, timeoutMs: number, resendable = true): Promise<Reply> {
    if (this.conn.state() !== 'up') return Promise.reject(this.notUp(message.targetService));
    if (this.replies.replyTo(message.targetService) !== undefined) return this.send(message, timeoutMs, resendable);
    return this.replies.open(message.targetService).then(() => this.send(message, timeoutMs, resendable));
  }

  private send(message: RequestMessage, timeoutMs: number, resendable: boolean): Promise<Reply> {
    const service = message.targetService;
    const keyed = message.headers.idempotencyKey !== undefined;
    const ch = keyed ? readyChannel<ConfirmChannel>(this.keyedRequests) : readyChannel(this.requests);
    const replyTo = this.replies.replyTo(service);
    if (this.conn.state() !== 'up') return Promise.reject(this.notUp(service));
    if (!ch || !replyTo) return Promise.reject(busChannelNotOpen(service));
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
      this.pending.add(id, {
        service,
        correlationId: String(message.headers.correlationId ?? ''),
        keyed,
        timeoutMs,
        resolve,
        reject,
        read: !keyed && isSafeRead(message.messageType) ? message : undefined,
        sentAgain: !resendable,
      });
      // A nack is 503 at once (the reply remains the acknowledgement of success); an unroutable request comes back
      // (basic.return, 503); a lost one ends at its deadline (504). A channel that closed before the confirm came:
      // keyed, 503 like a keyed request in flight on a lost connection; a read goes out again on the next channel.
      const watch = this.watches.of(ch);
      const token = watch.sent(Date.now(), id);
      const confirmed = (err: unknown) => {
        watch.confirmed(token);
        if (!err) this.nacksInARow.delete(ch);
        if (err) this.unconfirmed(id, service, err, ch as ConfirmChannel);
        else this.stalledAt = 0;
      };
      try {
        ch.publish(
          this.requestExchange,
          service,
          body,
          {
            mandatory: true,
            expiration: String(wait),
            type: message.messageType,
            correlationId: id,
            replyTo,
            contentType: JSON_TYPE,
            headers,
            // Services accept requests from the gateway's broker user only (serve's acceptRequestsFrom).
            userId: this.brokerUser,
          },
          confirmed,
        );
      } catch (err) {
        const closed = err instanceof Error && err.name === 'IllegalOperationError';
        this.pending.take(id)?.reject(closed ? busNotConnected(service) : notEncodable());
      }
    });
  }

  /** Why nothing can be published now: blocked by a broker alarm, or not connected. */
  private notUp(service?: string): Error {
    return this.conn.state() === 'blocked' ? busBlocked(service) : busNotConnected(service);
  }

  /**
   * A request the broker nacked (503: not taken), or whose channel closed before its confirm: keyed, 503 too (the
   * broker may have it, and its key makes sending it again safe); a read is parked and goes out again on the next
   * channel; another unkeyed request may still be answered, or ends at its deadline.
   */
  private unconfirmed(id: string, service: string, err: unknown, ch: ConfirmChannel): void {
    const nacked = err instanceof Error && err.message === NACKED;
    if (nacked) this.replaceNackingChannel(ch);
    const p = this.pending.get(id);
    if (p === undefined) return;
    if (nacked || p.keyed) {
      this.pending.take(id);
      p.reject(nacked ? busRefused(service) : busLostKeyed(service));
    } else if (p.read !== undefined && p.due! > performance.now()) {
      this.pending.take(id);
      this.parked.push({ request: p, message: p.read, due: p.due! });
      this.armParked();
    }
  }

  /**
   * After a cluster node is lost, RabbitMQ 3.10 can go on nacking every publish of a channel to a quorum queue whose
   * leader lives on, while a new channel on the same connection is taken at once (seen in test/e2e/cluster: keyed
   * creates 503 for minutes). So a request channel nacked NACKS_IN_A_ROW times with no ack between is handed over
   * to a new one, at most once a second. The new channel is attached before the old one is let go, and the old one
   * is closed only once what was sent on it had time to be confirmed: a service whose own reject-publish queue makes
   * the broker nack its requests (so that nacks come in a row while its traffic outnumbers the others') then costs
   * the other services' requests nothing (an attack that answered 12–32% of them 503 while the channel reopened).
   */
  private replaceNackingChannel(ch: ConfirmChannel): void {
    const inARow = (this.nacksInARow.get(ch) ?? 0) + 1;
    this.nacksInARow.set(ch, inARow);
    if (inARow < NACKS_IN_A_ROW) return;
    const now = Date.now();
    const reg = [this.keyedRequests, this.requests].find((r) => readyChannel(r) === ch);
    if (now - this.nackReplacedAt < NACKED_CHANNEL_REPLACE_MS || reg === undefined) return;
    this.nackReplacedAt = now;
    this.conn.logger.warn(`bus: the broker nacked a request: opening a new ${reg.label}`);
    void this.consumers.handOver(reg).then((old) => {
      if (old !== undefined) setTimeout(() => old.close().catch(noop), CONFIRM_STALL_MS).unref();
    });
  }

  /** basic.return: no queue is bound for the service (mandatory publish). */
  private onReturn(msg: Message): void {
    const p = this.pending.take(msg.properties.correlationId as string | undefined);
    if (p) p.reject(noInstance(p.service));
  }

  /** A reply off the reply queue of `service`. */
  private onReply(service: string, msg: ConsumeMessage): void {
    const id = msg.properties.correlationId as string | undefined;
    const waiting = this.pending.get(id);
    if (!waiting) return this.unmatchedReply(service); // late (after the deadline) or not an answer to this gateway
    const expected = this.check.replyUser?.(waiting.service);
    if (expected !== undefined && msg.properties.userId !== expected)
      return this.refuseReply(waiting.service, `expected ${expected}`, msg);
    // Another service's answer (possible under a shared credential): each service answers on its own queue only.
    if (waiting.service !== service)
      return this.refuseReply(waiting.service, `on the reply queue of ${inert(service)}`, msg);
    const p = this.pending.take(id) as AmqpPendingRequest;
    const max = this.check.maxBytes ?? DEFAULT_MAX_REPLY_BYTES;
    if (msg.content.length > max) {
      this.refusedLog.warn(
        JSON.stringify(['size', p.service]),
        `[${p.correlationId}] bus: a reply from service '${p.service}' of ${msg.content.length} bytes is over ${max} (maxReplyBytes); answered 502 unparsed`,
      );
      p.reject(badGateway(p.service));
      return;
    }
    if (hasInvalidHeaders(msg)) {
      this.refusedLog.warn(
        JSON.stringify(['headers', p.service]),
        `[${p.correlationId}] bus: a reply from service '${p.service}' has headers nested too deep or undecodable; answered 502 unparsed`,
      );
      p.reject(badGateway(p.service));
      return;
    }
    // Checked before anything is parsed: a reply nested thousands deep parses, but overflows the stack of whatever
    // walks it after (output check, writeOnly stripping, the response's JSON), and the client's connection was
    // dropped unanswered.
    const reply = decodeReply(msg.content, MAX_REPLY_DEPTH);
    if (reply === TOO_DEEP) {
      this.refusedLog.warn(
        JSON.stringify(['depth', p.service]),
        `[${p.correlationId}] bus: a reply from service '${p.service}' nests deeper than ${MAX_REPLY_DEPTH} levels; answered 502 unparsed`,
      );
      p.reject(badGateway(p.service));
      return;
    }
    if (!isReply(reply)) {
      this.conn.logger.error(`[${p.correlationId}] bus: malformed reply from service '${p.service}'`);
      p.resolve(internalErrorReply());
      return;
    }
    p.resolve(reply);
  }

  /**
   * A reply that another broker user published, or that came on another service's reply queue: dropped, and the
   * request keeps waiting for its service's own reply.
   */
  private refuseReply(service: string, why: string, msg: ConsumeMessage): void {
    const user = typeof msg.properties.userId === 'string' ? msg.properties.userId : undefined;
    const who = user === undefined ? 'no broker user (user_id)' : `broker user ${inert(user)}`;
    this.refusedLog.warn(
      JSON.stringify([service, user]),
      `bus: dropped a reply for ${service} published by ${who} (${why})`,
    );
    this.check.onRefusedReply?.(service);
  }

  /** Dropped, held nowhere: counted into one line per service a minute. */
  private unmatchedReply(service: string): void {
    this.refusedLog.warn(
      JSON.stringify(['unmatched', service]),
      `bus: dropped a reply on the reply queue of ${inert(service)} with no request waiting for it (late after its deadline, or not an answer of this gateway)`,
    );
  }

  async requestDiscovery(): Promise<void> {
    await this.publishConfirmed(this.discoveryExchange, DISCOVER_KEY, encodeJson({}));
  }

  /** With the broker user as `user_id`, so a gateway that requires it can tell who announced. */
  async announce(announcement: Announcement): Promise<void> {
    const service = announcement.service;
    const ch = readyChannel<ConfirmChannel>(this.confirms);
    const model = this.confirms.model;
    const checkedAt = ch ? this.announcesOn.get(ch)?.get(service) : undefined;
    // Again now and then: the exchanges (and the binding to the shared one that a gateway without a services file
    // hears on) can be deleted and made anew while this connection lives, and a publish to an exchange that lost its
    // binding goes nowhere without an error.
    if (ch && model && (checkedAt === undefined || Date.now() - checkedAt >= ANNOUNCE_TOPOLOGY_RECHECK_MS)) {
      if (!(await unlessClosed(model, ensureAnnounceExchange(this.conn.names, model, service))))
        throw busNotConnected();
      const known = this.announcesOn.get(ch) ?? new Map<string, number>();
      this.announcesOn.set(ch, known.set(service, Date.now()));
    }
    // On the service's own exchange, which routes to the gateway's intake for it and nowhere else.
    await this.publishConfirmed(
      this.conn.names.serviceAnnounceExchange(service),
      announceKey(service),
      encodeJson(announcement),
      this.brokerUser,
    );
  }

  private publishConfirmed(exchange: string, routingKey: string, body: Buffer, userId?: string): Promise<void> {
    const ch = readyChannel<ConfirmChannel>(this.confirms);
    if (this.conn.state() !== 'up' || !ch) return Promise.reject(this.notUp());
    return new Promise<void>((resolve, reject) => {
      try {
        ch.publish(
          exchange,
          routingKey,
          body,
          { contentType: JSON_TYPE, ...(userId !== undefined ? { userId } : {}) },
          (err: unknown) => {
            if (err) reject(busRefused());
            else resolve();
          },
        );
      } catch {
        reject(busNotConnected());
      }
    });
  }
}
