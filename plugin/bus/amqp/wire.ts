import type { ConsumeMessage, Options } from 'amqplib';
import type { MessageHeaders, MessageUser, RequestMessage } from '../transport';
import { hasInvalidHeaders } from './header-guard';

/*
 * The AMQP 0-9-1 wire format (docs/bus-protocol.md) — what a service in another language has to speak (every name
 * starts with the configured prefix P):
 *
 *   exchange P.requests   topic, durable    requests; routing key = target service. A topic exchange, so that the
 *                                           broker checks binding keys against each user's topic permissions: only
 *                                           S's user may bind a queue with key S.
 *   queue    P.svc.<svc>  non-durable, not auto-delete, x-expires 15000 (BUS_QUEUE_TYPE=quorum: a durable quorum
 *                         queue, x-delivery-limit 5, same x-expires); bound to P.requests with key <svc>; the
 *                         service's instances are competing consumers on it (manual ack after the reply,
 *                         prefetch); what a consumer held when it died is redelivered (`redelivered` set)
 *   exchange P.discovery  topic, durable    discovery requests: key `discover`, body `{}`, heard on a server-named
 *                                           `amq.gen-…` queue. Services only read it (before: also announced on it).
 *   exchange P.announcements.<svc>  topic, durable   the service's announcements and withdrawals: key
 *                                           `announce.<service>`, body = the Announcement JSON. Only the service
 *                                           writes it, only the gateway binds (its queue P.announce.<uuid> for that
 *                                           service): whatever the service sends there, dead letters included,
 *                                           reaches the gateway's intake for that service and nothing else.
 *   exchange P.announcements  topic, durable   where the gateway hears services it does not know in advance (no
 *                                           services file): a service that may binds its own exchange to it.
 *   exchange P.replies.<svc>  topic, durable   the service's replies; routing key = the request's replyTo. Only the
 *                                           service writes it, only the gateway's reply queues for it are bound.
 *   exchange P.replies    topic, durable    replies of services from before the per-service exchanges.
 *   queue    P.reply.<uuid>.<svc>  exclusive, x-max-length-bytes   the gateway's replies from one service (one per
 *                                           target service and gateway connection), bound to P.replies with its own
 *                                           name as key; each consumed on a channel of its own with a prefetch, so a
 *                                           flood on one service's queue neither delays another's replies nor grows
 *                                           the gateway's memory
 *
 * A request message: body = JSON `{ "input": {...} }` (the rest of the RequestMessage travels in
 * properties); properties: type = messageType, correlationId = a fresh id per request (NOT the trace
 * correlation id), replyTo = the gateway's reply queue for that service, expiration = the timeout in ms,
 * user_id = the gateway's broker user, contentType = application/json, mandatory; headers: correlationId,
 * requestId, user (the MessageUser as a JSON string, absent for anonymous calls), traceparent, tracestate and
 * baggage (W3C trace context and baggage, when present), deadline (ms since the epoch, as a decimal string),
 * idempotencyKey (the caller's Idempotency-Key, when it sent one on a command or POST), clientAddress (the caller's IP
 * as the host saw it).
 * The reply: published to P.replies.<svc> with routing key = the request's replyTo, the same correlationId, user_id =
 * the service's broker user, body = the Reply envelope as JSON; the service acks the request after replying.
 *
 * This file holds every name and header of that format; the request headers are encoded and decoded side by side.
 */

export const JSON_TYPE = 'application/json';
/** AMQP reply code of a declaration whose arguments differ from the existing entity's. */
export const PRECONDITION_FAILED = 406;
/** AMQP reply code of a declaration this broker user is not permitted. */
export const ACCESS_REFUSED = 403;

/** How long a work queue outlives its last consumer (x-expires): a reconnect or a restart finds its requests there. */
export const WORK_QUEUE_EXPIRES_MS = 15_000;
/**
 * The work queue of a service: not auto-delete, so the requests a consumer held when its connection dropped or its
 * process died are requeued and redelivered (to another instance, or to the same one once it is back) rather than
 * dropped with the queue; the broker deletes it once it has had no consumer for WORK_QUEUE_EXPIRES_MS. Not durable:
 * the requests are transient and the gateway's reply queue does not survive a broker restart either.
 */
const WORK_QUEUE_OPTIONS: Options.AssertQueue = {
  durable: false,
  autoDelete: false,
  arguments: { 'x-expires': WORK_QUEUE_EXPIRES_MS },
};

/**
 * The gateway's reply queue for one service: bounded, so a service flooding its own replies costs the broker at most
 * this much (the oldest dropped first) and the gateway nothing beyond its prefetch.
 */
const REPLY_QUEUE_MAX_BYTES = 64 * 1024 * 1024;
export const REPLY_QUEUE_OPTIONS: Options.AssertQueue = {
  exclusive: true,
  autoDelete: false,
  durable: false,
  arguments: { 'x-max-length-bytes': REPLY_QUEUE_MAX_BYTES },
};

/** What a work queue is: classic (one node, the default) or quorum (replicated over a cluster; BUS_QUEUE_TYPE). */
export type WorkQueueType = 'classic' | 'quorum';
const WORK_QUEUE_TYPES: readonly WorkQueueType[] = ['classic', 'quorum'];
/**
 * A quorum queue drops a request handed out this many times without an ack (a request that kills every instance
 * it reaches): the gateway answers it 504 at its deadline instead of the service crash-looping.
 */
const QUORUM_DELIVERY_LIMIT = 5;
/**
 * The work queue as a quorum queue: replicated, so it and its requests survive the loss of a node; durable by
 * nature (RabbitMQ refuses a transient one). It expires like the classic one.
 */
const QUORUM_WORK_QUEUE_OPTIONS: Options.AssertQueue = {
  durable: true,
  autoDelete: false,
  arguments: {
    'x-queue-type': 'quorum',
    'x-expires': WORK_QUEUE_EXPIRES_MS,
    'x-delivery-limit': QUORUM_DELIVERY_LIMIT,
  },
};

/** The declaration of a work queue of `type`. */
export function workQueueOptions(type: WorkQueueType): Options.AssertQueue {
  return type === 'quorum' ? QUORUM_WORK_QUEUE_OPTIONS : WORK_QUEUE_OPTIONS;
}

/** BUS_QUEUE_TYPE: classic when unset; anything but classic or quorum is refused in one line. */
export function workQueueTypeOf(value: string | undefined): WorkQueueType {
  const text = (value ?? '').trim().toLowerCase();
  if (text === '') return 'classic';
  if ((WORK_QUEUE_TYPES as readonly string[]).includes(text)) return text as WorkQueueType;
  throw new Error(`BUS_QUEUE_TYPE must be classic or quorum (got ${JSON.stringify(value).slice(0, 40)})`);
}

/** Routing keys on the discovery exchange. */
const ANNOUNCE_KEY_PREFIX = 'announce.';
export const ANNOUNCE_BINDING = `${ANNOUNCE_KEY_PREFIX}#`;
export const DISCOVER_KEY = 'discover';

export function announceKey(service: string): string {
  return `${ANNOUNCE_KEY_PREFIX}${service}`;
}

/** The service an announcement's routing key names ('' for another key). */
export function announcedService(routingKey: string): string {
  return routingKey.startsWith(ANNOUNCE_KEY_PREFIX) ? routingKey.slice(ANNOUNCE_KEY_PREFIX.length) : '';
}

/** The exchange and queue names under one prefix. */
export class BusNames {
  readonly requestExchange: string;
  readonly discoveryExchange: string;
  readonly replyExchange: string;
  /** Where services' announcement exchanges are bound when the gateway does not know the services in advance. */
  readonly announceExchange: string;

  constructor(readonly prefix: string) {
    this.requestExchange = `${prefix}.requests`;
    this.discoveryExchange = `${prefix}.discovery`;
    this.replyExchange = `${prefix}.replies`;
    this.announceExchange = `${prefix}.announcements`;
  }

  /** The exchange `service` announces on: written by that service only, read by the gateway only. */
  serviceAnnounceExchange(service: string): string {
    return `${this.announceExchange}.${service}`;
  }

  /** The exchange `service` replies on: written by that service only, bound to the gateway's reply queues for it. */
  serviceReplyExchange(service: string): string {
    return `${this.replyExchange}.${service}`;
  }

  /** The work queue of `service`. */
  serviceQueue(service: string): string {
    return `${this.prefix}.svc.${service}`;
  }

  /** An exclusive queue of this connection: the gateway's announcement listener ('announce'). */
  listenerQueue(kind: string, id: string): string {
    return `${this.prefix}.${kind}.${id}`;
  }

  /**
   * The gateway's reply queue for `service`, which is also the routing key of its replies on P.replies (the
   * service's topic permission allows keys ending in its own name only). A service that still replies through the
   * default exchange (routing key = queue name) reaches the same queue.
   */
  replyQueue(id: string, service: string): string {
    return `${this.prefix}.reply.${id}.${service}`;
  }
}

export function encodeJson(value: unknown): Buffer {
  return Buffer.from(JSON.stringify(value), 'utf8');
}

/** The user header's JSON, made once per cached (frozen) user rather than on each of its requests. */
const userJson = new WeakMap<object, string>();

function userHeader(user: object): string {
  if (!Object.isFrozen(user)) return JSON.stringify(user);
  let json = userJson.get(user);
  if (json === undefined) userJson.set(user, (json = JSON.stringify(user)));
  return json;
}

/** A request's headers as AMQP headers (strings only); throws when the user cannot be serialised. */
export function encodeHeaders(h: MessageHeaders): Record<string, string> {
  const headers: Record<string, string> = {};
  headers.correlationId = String(h.correlationId ?? '');
  headers.requestId = String(h.requestId ?? '');
  if (h.user) headers.user = userHeader(h.user);
  if (h.traceparent) headers.traceparent = h.traceparent;
  if (h.tracestate) headers.tracestate = h.tracestate;
  if (h.baggage) headers.baggage = h.baggage;
  if (h.deadline) headers.deadline = String(h.deadline);
  if (h.idempotencyKey) headers.idempotencyKey = h.idempotencyKey;
  if (h.clientAddress) headers.clientAddress = h.clientAddress;
  return headers;
}

function headerString(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (Buffer.isBuffer(value)) return value.toString('utf8');
  return undefined;
}

/** The correlation id a request message carries, for service-side log lines (bounded and inert: it came off the wire). */
export function traceIdOf(msg: ConsumeMessage): string {
  return (headerString(msg.properties.headers?.correlationId) ?? '').slice(0, 128).replace(/[^A-Za-z0-9._:-]/g, '?');
}

/** A request message off the work queue, or null when it is malformed (answered BAD_REQUEST). */
export function decodeRequest(msg: ConsumeMessage, service: string): RequestMessage | null {
  if (hasInvalidHeaders(msg)) return null;
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
  const tracestate = headerString(raw.tracestate);
  if (tracestate !== undefined) headers.tracestate = tracestate;
  const baggage = headerString(raw.baggage);
  if (baggage !== undefined) headers.baggage = baggage;
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
  const deliveryCount = raw['x-delivery-count'];
  if (typeof deliveryCount === 'number' && deliveryCount > 0) request.deliveryCount = deliveryCount;
  if (typeof msg.properties.userId === 'string') request.publisher = msg.properties.userId;
  return request;
}
