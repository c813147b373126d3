import { randomUUID } from 'node:crypto';
import type { Contract, Maintenance } from '../plugin/contracts/types';
import type { MessageHeaders, Reply, RequestMessage, Subscription, Transport } from '../plugin/bus/transport';
import { ServiceError } from './service-error';
import { IdempotencyGuard, type IdempotencyOptions, type IdempotencyScope } from './idempotency/guard';
import { context, SpanStatusCode } from '@opentelemetry/api';
import { startHandlerSpan } from '../plugin/observability/tracing';
import { errorMessage } from '../plugin/errors/describe';
import { withRequestDeadline } from './deadline';

/**
 * What a handler gets besides its input: the caller and the trace ids the gateway sent, and, when the service keeps
 * idempotency keys and the request has one, its scope (to record the answer in the handler's own transaction), and on
 * a quorum work queue's redelivery `deliveryCount` (how often it was handed out before: a poison request's count).
 */
export type HandlerContext = MessageHeaders & { idempotency?: IdempotencyScope; deliveryCount?: number };

/** A handler's answer when it needs more than a body: another 2xx or a Location header. */
export interface Answer<T = unknown> {
  readonly [ANSWER]: true;
  result: T;
  status?: number;
  location?: string;
}
const ANSWER = Symbol('answer');

export function answer<T>(result: T, opts: { status?: number; location?: string } = {}): Answer<T> {
  return { [ANSWER]: true, result, ...opts };
}

/** The answer to a request that reached the service after its deadline; no handler runs for it. */
const ARRIVED_LATE: Reply = {
  ok: false,
  error: { code: 'REQUEST_TIMEOUT', message: 'The request arrived after its deadline' },
};

/** A handler's return value as the reply envelope. */
function toReply(out: unknown): Reply {
  if (out && typeof out === 'object' && ANSWER in out) {
    const a = out as Answer;
    return { ok: true, result: a.result, status: a.status, location: a.location };
  }
  return { ok: true, result: out };
}

function defaultIdempotencyLog(service: string, err: unknown): void {
  console.error(`[${service}] idempotency store: ${errorMessage(err)}`);
}

export type Handler = (input: Record<string, unknown>, ctx: HandlerContext) => unknown;

export interface Operation {
  contract: Omit<Contract, 'targetService'>;
  handle: Handler;
  /**
   * Its answers carry credentials (tokens): they are never kept by the idempotency store, where a repeat of the
   * key would get them back, so a request with an Idempotency-Key is simply not deduplicated.
   */
  secretAnswers?: boolean;
}

export interface ServeOptions {
  transport: Transport;
  service: string;
  operations: Operation[];
  /** The lease announced with the contracts; re-announced every third of it. */
  ttlMs?: number;
  prefetch?: number;
  instanceId?: string;
  onError?: (err: unknown, message: RequestMessage) => void;
  /**
   * Deduplicates requests that carry an Idempotency-Key (docs/bus-protocol.md "Idempotency keys"). Give every
   * instance of the service the same store (PgIdempotencyStore) so a request redelivered to another instance is
   * recognised too.
   */
  idempotency?: IdempotencyOptions;
  /** Failures of the idempotency store (logged to stderr by default; never sent to the caller). */
  onIdempotencyError?: (err: unknown) => void;
  /**
   * The gateway's broker user: requests published by any other user, or by none (RabbitMQ-validated `user_id`),
   * never reach a handler and get no reply, so a process holding another service's credentials cannot send this
   * service requests with a forged caller. Unset: env BUS_GATEWAY_USER, else `gateway` — or, while this service
   * logs in with the shared development credential `guest`, `guest` (see requestPublisher). AMQP only: the
   * in-process bus has no users.
   */
  acceptRequestsFrom?: string;
  /** Where the warning about a shared credential goes (console.warn by default). */
  warn?: (message: string) => void;
}

export interface RunningService {
  readonly service: string;
  readonly instanceId: string;
  /** The message types this instance announces. */
  readonly messageTypes: readonly string[];
  /**
   * Withdraws the contracts first (the gateway stops routing here), then stops consuming; handlers in flight finish.
   * `drainMs`: keep consuming this long after the withdrawal, for requests the gateway sent before it saw it.
   */
  stop(opts?: { drainMs?: number }): Promise<void>;
  /**
   * Puts this instance in maintenance, announced at once and with every re-announcement: while every live instance
   * of the service is, the gateway answers its routes 503 with `Retry-After: retryAfterSeconds` (an integer from 1 to
   * 86400) and sends it nothing. `false` ends it (announced at once too). Requests already sent are still handled.
   */
  maintenance(state: { retryAfterSeconds: number } | false): Promise<void>;
}

/** The broker user amqplib logs in as when the URL names none, and RabbitMQ's development default. */
const SHARED_DEV_USER = 'guest';
/** The gateway's broker user in the generated broker definitions (contracts-broker-definitions --gateway-user). */
const DEFAULT_GATEWAY_USER = 'gateway';

/**
 * Whose requests a service takes by default: the option, else BUS_GATEWAY_USER, else `gateway`. Fail closed: a
 * service with a broker user of its own never takes requests from just anyone. With the shared `guest` credential
 * the gateway publishes as `guest` too, so that is whose requests are taken (and anyone else using it is the gateway
 * as far as the broker can tell). Undefined: no check (the in-process bus).
 */
export function requestPublisher(
  transport: Pick<Transport, 'kind' | 'brokerUser'>,
  option: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  if (transport.kind !== 'amqp') return undefined;
  if (option !== undefined) return option;
  const fromEnv = env.BUS_GATEWAY_USER?.trim();
  if (fromEnv) return fromEnv;
  return transport.brokerUser === SHARED_DEV_USER ? SHARED_DEV_USER : DEFAULT_GATEWAY_USER;
}

/** The shared-credential warning, once per process whatever the number of services in it. */
let warnedShared = false;

/** The lease a service announces when serve() is not given one. */
const DEFAULT_TTL_MS = 15_000;
/** Re-announcing more often than this buys nothing, whatever the lease. */
const MIN_REANNOUNCE_EVERY_MS = 100;

/** Discovery requests may come in floods (anyone who may publish `discover`): answered at most once a second. */
const DISCOVERY_ANSWER_GAP_MS = 1000;

/** Runs `fn` after `ms` without keeping the process alive for it. */
function unrefTimeout(fn: () => void, ms: number): void {
  setTimeout(fn, ms).unref();
}

/**
 * Calls `announce` for a discovery request, at most once per gap; a request during the gap gets one call after it.
 * `now` and `after` are the clock and the timer, which tests replace to step through a gap exactly.
 */
export function answerDiscovery(
  announce: () => void,
  gapMs = DISCOVERY_ANSWER_GAP_MS,
  now: () => number = Date.now,
  after: (fn: () => void, ms: number) => void = unrefTimeout,
): () => void {
  let last = -Infinity;
  let queued = false;
  const fire = (): void => {
    queued = false;
    last = now();
    announce();
  };
  return () => {
    if (queued) return;
    const wait = last + gapMs - now();
    if (wait <= 0) return fire();
    queued = true;
    after(fire, wait);
  };
}

/**
 * Runs a service on the bus: handles its messages and announces its contracts, so a Node service has no bus
 * code. A handler returns its result (or `answer(...)`), or throws a ServiceError; anything else thrown
 * becomes INTERNAL_ERROR with no detail sent to the caller.
 */
export async function serve(opts: ServeOptions): Promise<RunningService> {
  const { transport, service } = opts;
  const ttlMs = opts.ttlMs ?? DEFAULT_TTL_MS;
  const instanceId = opts.instanceId ?? `${service}-${randomUUID()}`;
  const contracts: Contract[] = opts.operations.map((op) => ({ ...op.contract, targetService: service }));
  const handlers = new Map(opts.operations.map((op) => [op.contract.messageType, op.handle]));
  const secretAnswers = new Set(opts.operations.filter((op) => op.secretAnswers).map((op) => op.contract.messageType));
  const onStoreError = opts.onIdempotencyError ?? ((err: unknown) => defaultIdempotencyLog(service, err));
  const guard = opts.idempotency ? new IdempotencyGuard(service, opts.idempotency, onStoreError) : undefined;

  const run = async (handler: Handler, message: RequestMessage, ctx: HandlerContext): Promise<Reply> => {
    try {
      return toReply(await handler(message.input, ctx));
    } catch (err) {
      if (err instanceof ServiceError) return err.toReply();
      opts.onError?.(err, message);
      return { ok: false, error: { code: 'INTERNAL_ERROR', message: 'Internal error' } };
    }
  };

  // Each message continues the gateway's trace (its traceparent, tracestate and baggage headers): the handler runs
  // in that span's context, its baggage included, so its own calls pass both on.
  const handle = (message: RequestMessage): Promise<Reply> => {
    const { span, ctx } = startHandlerSpan(service, message.messageType, message.headers, transport);
    // The deadline travels with the handler's async work: a database call can give up before the gateway does.
    return context
      .with(ctx, () => withRequestDeadline(message.headers.deadline, () => dispatch(message)))
      .then(
        (reply) => {
          if (!reply.ok) span.setStatus({ code: SpanStatusCode.ERROR, message: reply.error.code });
          span.end();
          return reply;
        },
        (err: unknown) => {
          span.setStatus({ code: SpanStatusCode.ERROR });
          span.end();
          throw err;
        },
      );
  };

  const dispatch = async (message: RequestMessage): Promise<Reply> => {
    // Past its deadline (it waited in the prefetch buffer, or came back late): the caller has had its 504, so the
    // work is not started; this reply is dropped by the gateway.
    if (message.headers.deadline !== undefined && Date.now() > message.headers.deadline) return ARRIVED_LATE;
    const handler = handlers.get(message.messageType);
    if (!handler)
      return { ok: false, error: { code: 'HANDLER_NOT_FOUND', message: `No handler for ${message.messageType}` } };
    const headers: HandlerContext =
      message.deliveryCount === undefined
        ? message.headers
        : { ...message.headers, deliveryCount: message.deliveryCount };
    if (!guard || message.headers.idempotencyKey === undefined || secretAnswers.has(message.messageType))
      return run(handler, message, headers);
    return guard.run(message, toReply, (idempotency) => run(handler, message, { ...headers, idempotency }));
  };

  let maintenance: Maintenance | undefined;
  const announce = (withdrawn = false) =>
    transport.announce({
      service,
      instanceId,
      contracts: withdrawn ? [] : contracts,
      ttlMs,
      withdrawn: withdrawn || undefined,
      ...(maintenance !== undefined && !withdrawn ? { maintenance } : {}),
    });

  const acceptRequestsFrom = requestPublisher(transport, opts.acceptRequestsFrom);
  if (transport.kind === 'amqp' && transport.brokerUser === SHARED_DEV_USER && !warnedShared) {
    warnedShared = true;
    (opts.warn ?? console.warn)(
      `[${service}] the bus credential is the shared '${SHARED_DEV_USER}': whoever holds it can send this service requests and answer for it; ` +
        'give each service and the gateway a broker user of its own (docs/operations.md, "Trust on the bus")',
    );
  }
  const subs: Subscription[] = [];
  let stopped = false;
  subs.push(await transport.serve(service, handle, { prefetch: opts.prefetch, acceptRequestsFrom }));
  subs.push(await transport.onDiscoveryRequest(answerDiscovery(() => void announce().catch(() => undefined))));
  await announce();
  // After a reconnect (its node lost or frozen, or the bus unblocked) at once, not a third of a lease later: the
  // gateway holds the lease only so long.
  transport.onStateChange((state) => {
    if (state === 'up' && !stopped) void announce().catch(() => undefined);
  });
  const timer = setInterval(
    () => void announce().catch(() => undefined),
    Math.max(MIN_REANNOUNCE_EVERY_MS, Math.floor(ttlMs / 3)),
  );
  timer.unref();

  return {
    service,
    instanceId,
    messageTypes: contracts.map((c) => c.messageType),
    async maintenance(state) {
      if (state !== false) {
        const seconds = state.retryAfterSeconds;
        // What the gateway accepts (plugin/contracts/announcement-validation.ts): anything else would refuse the
        // whole announcement, contracts and all.
        if (!Number.isInteger(seconds) || seconds < 1 || seconds > 86_400)
          throw new RangeError(`maintenance: retryAfterSeconds must be an integer from 1 to 86400 (got ${seconds})`);
      }
      maintenance = state === false ? undefined : { retryAfterSeconds: state.retryAfterSeconds };
      if (!stopped) await announce();
    },
    async stop(stopOpts = {}) {
      if (stopped) return;
      stopped = true;
      clearInterval(timer);
      await announce(true).catch(() => undefined);
      if (stopOpts.drainMs) await new Promise((r) => setTimeout(r, stopOpts.drainMs));
      for (const s of subs) await s.close().catch(() => undefined);
    },
  };
}
