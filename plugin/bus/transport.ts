import type { Announcement } from '../contracts/types';

/** The authenticated caller as the gateway passes it to services. */
export interface MessageUser {
  userId: string;
  email: string;
  name: string;
  permissions: string[];
  roles?: string[];
}

/** Trace and identity that travel with every request message (AMQP headers; in-process, as is). */
export interface MessageHeaders {
  correlationId: string;
  requestId: string;
  user?: MessageUser;
  /** The trace context (W3C Trace Context): the span the service continues; the caller's when the gateway records none. */
  traceparent?: string;
  /** The trace context's vendor entries (W3C Trace Context), as the caller or the gateway's tracer passed them. */
  tracestate?: string;
  /** W3C Baggage: the caller's key-value pairs, passed on by the gateway's propagator. */
  baggage?: string;
  /** When the gateway stops waiting for the reply, in ms since the Unix epoch: a service can skip work nobody awaits. */
  deadline?: number;
  /** The caller's Idempotency-Key (commands and POSTs only); the service deduplicates by (user.userId, key). */
  idempotencyKey?: string;
  /** The caller's IP address as the gateway saw it (X-Forwarded-For only where the host trusts a proxy). */
  clientAddress?: string;
}

/** A command or query on its way to a service. */
export interface RequestMessage {
  messageType: string;
  targetService: string;
  input: Record<string, unknown>;
  headers: MessageHeaders;
  /**
   * Set by the transport when this delivery may have been handed to another consumer before (AMQP `redelivered`:
   * an instance died or lost its channel holding it). The handler may already have run, or still be running there.
   */
  redelivered?: boolean;
  /**
   * AMQP, quorum work queues: how many times the broker handed this request out before (`x-delivery-count`); the
   * queue drops it after QUORUM_DELIVERY_LIMIT. Absent on a first delivery and on classic queues.
   */
  deliveryCount?: number;
  /** Service side, AMQP: the broker user that published the request (RabbitMQ-validated `user_id`), if stamped. */
  publisher?: string;
}

/** A service error as it crosses the bus: a code of the error table (plugin/errors/codes.ts) plus its extra fields. */
export interface ReplyError {
  code: string;
  message?: string;
  details?: Record<string, unknown>;
  /** Only where a code has two statuses (422 for VALIDATION_ERROR, 502/503). */
  status?: number;
  [extra: string]: unknown;
}

/**
 * The reply envelope (docs/bus-protocol.md "Replies"). `status` lets a service pick another 2xx;
 * `location` becomes the Location header of a create. `replayed`: the answer was recorded earlier under the
 * request's Idempotency-Key and is sent again (the handler did not run); the gateway says so in a response header.
 */
export type Reply =
  | { ok: true; result?: unknown; status?: number; location?: string; replayed?: boolean }
  | { ok: false; error: ReplyError; replayed?: boolean };

export type RequestHandler = (message: RequestMessage) => Promise<Reply>;

/** Where an announcement came from, as far as the bus can vouch for it. */
export interface AnnouncementOrigin {
  /** The broker user that published it: RabbitMQ refuses a `user_id` other than the connection's own user. */
  userId?: string;
  /** A digest of the message as it was sent, so an exact repeat is known without walking the parsed value. */
  digest?: string;
  /** Its size as it was sent, for the gateway's memory budget of announcements waiting to be applied. */
  bytes?: number;
}

/**
 * Gets every announcement and withdrawal, as it came off the bus (an object naming a service, not yet validated:
 * the registry checks the rest).
 */
export type AnnouncementListener = (announcement: Announcement, origin: AnnouncementOrigin) => void;

export interface Subscription {
  /** Stops consuming; in-flight handlers finish, nothing new is delivered. */
  close(): Promise<void>;
}

/** `blocked`: AMQP, connected but RabbitMQ holds back what it publishes (a memory or disk alarm: `blockedReason`). */
export type TransportState = 'connecting' | 'up' | 'blocked' | 'down' | 'closed';

/** How a service consumes its work queue. */
export interface WorkQueueOptions {
  /** Requests handed to this consumer at once. */
  prefetch?: number;
  /**
   * AMQP: the only broker user whose requests (RabbitMQ-validated `user_id`) reach the handler; others are dropped
   * unanswered. Unset: any publisher. The in-process bus has no users and ignores it.
   */
  acceptRequestsFrom?: string;
}

/**
 * What the gateway and the service SDK need from a message bus. Implemented by the AMQP transport
 * (RabbitMQ) and the in-process one (the embedded default); both pass test/bus/conformance.
 *
 * Failure contract of `request` (it never hangs past the deadline and never rejects with anything else):
 * - no consumer for targetService, or the bus is down → GatewayError SERVICE_UNAVAILABLE 503 with Retry-After;
 * - the connection dropped while the request was in flight → SERVICE_UNAVAILABLE 502 with `service` (AMQP, a request
 *   with an Idempotency-Key: 503 with Retry-After, as its retry is safe);
 * - no reply within timeoutMs → TIMEOUT 504 with `timeoutMs`; a reply that comes later is dropped.
 */
export interface Transport {
  readonly kind: 'amqp' | 'inprocess';
  /** AMQP: the broker user this transport logs in as (stamped as `user_id` on what it publishes). */
  readonly brokerUser?: string;
  /** AMQP: the exchange requests are published to (their routing key is the service); spans name it. */
  readonly requestExchange?: string;
  state(): TransportState;
  /** AMQP: the broker node (`host:port`) the connection is on now; undefined while down. */
  node?(): string | undefined;
  /** AMQP: why RabbitMQ blocks the connection (its alarm, e.g. `low on memory`) while state() is `blocked`. */
  blockedReason?(): string | undefined;
  /** Resolves once usable; the AMQP transport keeps reconnecting by itself after this. */
  start(): Promise<void>;
  close(): Promise<void>;
  /** Called whenever state() changes. */
  onStateChange(listener: (state: TransportState) => void): void;

  // gateway side
  request(message: RequestMessage, timeoutMs: number): Promise<Reply>;
  /**
   * Rejects every request still waiting for its reply with `error()`: a graceful stop whose grace period ran out
   * answers them (503) instead of leaving the callers cut off. Later requests are not affected.
   */
  abortPending(error: () => Error): void;
  /** Every announcement and withdrawal from any service instance. */
  onAnnouncement(listener: AnnouncementListener): Promise<Subscription>;
  /**
   * Why the gateway cannot hear announcements now (the broker refuses its listener, e.g. at a vhost's queue limit,
   * or confirms none of its requests), in words of our own; undefined while it hears. A transport without the method
   * always hears.
   */
  announcementsUnheard?(): string | undefined;
  /**
   * AMQP: the channels the broker refuses to set up now (a reply consumer at the vhost's queue limit, say), one line
   * each, in words of our own; empty while it refuses none.
   */
  refusedChannels?(): string[];
  /** Asks every running service to announce now (at gateway start and after a reconnect). */
  requestDiscovery(): Promise<void>;

  // service side
  /** Competing consumer on the service's work queue: N instances of one service share its requests. */
  serve(service: string, handler: RequestHandler, opts?: WorkQueueOptions): Promise<Subscription>;
  announce(announcement: Announcement): Promise<void>;
  onDiscoveryRequest(listener: () => void): Promise<Subscription>;
}
