import {
  context,
  propagation,
  trace,
  ProxyTracerProvider,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  type Context,
  type Span,
  type TextMapGetter,
  type TextMapPropagator,
  type TextMapSetter,
} from '@opentelemetry/api';

/**
 * OpenTelemetry spans through @opentelemetry/api only: a no-op (nothing recorded, nothing exported) until the
 * deployment registers an SDK (docs/operations.md "Traces"). The tracer is the global provider's proxy, so an SDK
 * registered after this module loads is used from then on.
 */
const TRACER_NAME = 'express-gateway-plugin-contracts';
const tracer = trace.getTracer(TRACER_NAME);

/** The provider that stands in while no SDK is registered (a singleton of @opentelemetry/api). */
const NO_SDK = new ProxyTracerProvider().getDelegate();

/**
 * Whether an SDK is registered: without one every span is a non-recording stand-in, and the gateway makes none (two
 * spans and their attribute objects per request for nothing). Asked per request: an SDK may be registered later.
 */
export function tracing(): boolean {
  const provider = trace.getTracerProvider();
  return !(provider instanceof ProxyTracerProvider) || provider.getDelegate() !== NO_SDK;
}

/** The W3C fields of a trace context as they travel in a request message's headers (plugin/bus/transport.ts). */
export interface TraceCarrier {
  traceparent?: string;
  tracestate?: string;
  baggage?: string;
}

/** What the propagators read a trace context from: a request's or a message's headers. */
type Headers = Readonly<Record<string, unknown>>;

/** Reads header values as the propagators expect them: strings, or the first of repeated HTTP headers. */
const HEADER_GETTER: TextMapGetter<Headers> = {
  get(carrier, key) {
    const value = carrier[key];
    return typeof value === 'string' || Array.isArray(value) ? (value as string | string[]) : undefined;
  },
  keys: (carrier) => Object.keys(carrier),
};

/** Writes the W3C fields only: a message's headers have no room for other names (docs/bus-protocol.md). */
const CARRIER_SETTER: TextMapSetter<TraceCarrier> = {
  set(carrier, key, value) {
    if (key === 'traceparent' || key === 'tracestate' || key === 'baggage') carrier[key] = value;
  },
};

/** What reads and writes a trace context: the propagation API, or a propagator of its own. */
export type Propagator = Pick<TextMapPropagator, 'inject' | 'extract'>;

/**
 * The propagator in force: the one the deployment registered (an SDK registers W3C trace context and baggage unless
 * told otherwise: OTEL_PROPAGATORS), else `fallback` when given (the gateway's: plugin/observability/w3c.ts), else
 * none. Asked each time: a propagator may be registered later.
 */
function propagator(fallback: Propagator | undefined): Propagator {
  return fallback === undefined || propagation.fields().length > 0 ? propagation : fallback;
}

/** The trace context (span context and baggage) that a request's or a message's headers carry, under ROOT_CONTEXT. */
export function extractFrom(headers: Headers, fallback?: Propagator): Context {
  return propagator(fallback).extract(ROOT_CONTEXT, headers, HEADER_GETTER);
}

/** Writes the trace context of `ctx` (its span, its baggage) into a message's headers. */
export function injectInto(ctx: Context, carrier: TraceCarrier, fallback?: Propagator): void {
  propagator(fallback).inject(ctx, carrier, CARRIER_SETTER);
}

/** What a server span reads of its request at the start (an IncomingMessage fits). */
export interface ServerRequest {
  method?: string;
  url?: string;
  headers: Headers & { host?: string; 'user-agent'?: string };
  socket: { localPort?: number; encrypted?: boolean };
}

/** Host header → server.address and server.port (the port the caller named, else the one it reached). */
function serverOf(host: string | undefined, localPort: number | undefined): { address?: string; port?: number } {
  const m = host === undefined ? null : /^(\[[^\]]*\]|[^:]*)(?::(\d{1,5}))?$/.exec(host);
  if (!m || m[1] === '') return localPort === undefined ? {} : { port: localPort };
  const port = m[2] === undefined ? localPort : Number(m[2]);
  return { address: m[1]!.replace(/^\[|\]$/g, ''), ...(port !== undefined ? { port } : {}) };
}

/** A request's server span and the context the rest of the request runs in (the span active in it). */
export interface ServerSpan {
  span: Span;
  ctx: Context;
  /** Whether the plugin opened the span and ends it; false: the HTTP instrumentation's, which the plugin enriches. */
  own: boolean;
}

/** Whether an active span is a SERVER span: the SDK's spans say their kind; one that records nothing is taken as one. */
function isServerSpan(span: Span): boolean {
  const kind = (span as { kind?: unknown }).kind;
  return kind === undefined || kind === SpanKind.SERVER;
}

/**
 * The server span of one request. When one is already active (the deployment loaded the HTTP instrumentation, which
 * opens it before the request reaches the gateway), that one, enriched at the end (endServerSpan): one request, one
 * SERVER span. Else a span of its own, named by its method until the route template is known, continuing the trace
 * context the request's headers carry (read by the registered propagators, else by `fallback`). Its attributes
 * follow the OpenTelemetry HTTP server conventions; they are worked out only when the span records.
 * `pathOf` gives url.path from the request's URL (the observer's: without the query string, as the access log).
 */
export function startServerSpan(
  req: ServerRequest,
  pathOf: (url: string | undefined) => string,
  fallback?: Propagator,
): ServerSpan {
  const active = context.active();
  const current = trace.getSpan(active);
  if (current !== undefined && isServerSpan(current)) return { span: current, ctx: active, own: false };
  const parent = current !== undefined ? active : extractFrom(req.headers, fallback);
  const method = req.method ?? 'OTHER';
  const span = tracer.startSpan(
    method,
    { kind: SpanKind.SERVER, attributes: { 'http.request.method': method } },
    parent,
  );
  const started = { span, ctx: trace.setSpan(parent, span), own: true };
  if (!span.isRecording()) return started;
  const server = serverOf(req.headers.host, req.socket.localPort);
  span.setAttribute('url.path', pathOf(req.url));
  span.setAttribute('url.scheme', req.socket.encrypted ? 'https' : 'http');
  if (server.address !== undefined) span.setAttribute('server.address', server.address);
  if (server.port !== undefined) span.setAttribute('server.port', server.port);
  const agent = req.headers['user-agent'];
  if (agent !== undefined) span.setAttribute('user_agent.original', agent);
  return started;
}

/** How a request ended, besides its status. */
export interface ServerSpanEnd {
  correlationId?: string;
  requestId?: string;
  /** The caller's address as the host saw it (its trust proxy setting applied). */
  clientAddress?: string;
}

/**
 * Names the server span by its route template (`GET /api/users/:userId`) and, when it is the plugin's own, ends it
 * with the answer's status; a 5xx sets error.type to the status code, as the conventions ask of a server. The HTTP
 * instrumentation's span gets the route, the name and the gateway's ids; the instrumentation sets the status and the
 * client's address and ends it, after this (the observer's listener runs first).
 */
export function endServerSpan(
  { span, own }: ServerSpan,
  method: string,
  route: string,
  status: number,
  end: ServerSpanEnd,
): void {
  if (span.isRecording()) {
    span.updateName(`${method} ${route}`);
    span.setAttribute('http.route', route);
    if (own) span.setAttribute('http.response.status_code', status);
    if (own && end.clientAddress) span.setAttribute('client.address', end.clientAddress);
    if (end.correlationId) span.setAttribute('contracts.correlation_id', end.correlationId);
    if (end.requestId) span.setAttribute('contracts.request_id', end.requestId);
    if (status >= 500) {
      span.setAttribute('error.type', String(status));
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
  }
  if (own) span.end();
}

/** Where a request message goes: on RabbitMQ the requests exchange and the service as routing key. */
export interface BusDestination {
  /** `amqp` or `inprocess`; messaging.system is `rabbitmq` for the first. */
  kind: string;
  /** The exchange requests are published to (AMQP); the in-process bus has none, its destination is the service. */
  requestExchange?: string;
}

/** The messaging attributes of a request message to `service`, for its PRODUCER and CONSUMER spans. */
function messagingAttributes(
  bus: BusDestination,
  service: string,
  operation: 'publish' | 'process',
): Record<string, string> {
  const amqp = bus.kind === 'amqp' && bus.requestExchange !== undefined;
  return {
    'messaging.system': bus.kind === 'amqp' ? 'rabbitmq' : bus.kind,
    'messaging.operation.name': operation,
    'messaging.operation.type': operation === 'publish' ? 'send' : 'process',
    'messaging.destination.name': amqp ? bus.requestExchange! : service,
    ...(amqp ? { 'messaging.rabbitmq.destination.routing_key': service } : {}),
  };
}

/**
 * The child span of a request's bus round trip (PRODUCER, `publish <exchange>`) under the request's context (its server
 * span, its baggage), from the send to the reply; its context is the one the message carries to the service.
 */
export function startBusSpan(parent: Context, messageType: string, targetService: string, bus: BusDestination): Span {
  const attributes = messagingAttributes(bus, targetService, 'publish');
  return tracer.startSpan(
    `publish ${attributes['messaging.destination.name']}`,
    {
      kind: SpanKind.PRODUCER,
      attributes: { ...attributes, 'contracts.message_type': messageType, 'contracts.target_service': targetService },
    },
    parent,
  );
}

/** Ends the bus span with how the round trip ended (error.type: the outcome, when it is not a reply). */
export function endBusSpan(span: Span, outcome: string): void {
  if (span.isRecording()) {
    span.setAttribute('contracts.outcome', outcome);
    if (outcome !== 'reply') {
      span.setAttribute('error.type', outcome);
      span.setStatus({ code: SpanStatusCode.ERROR, message: outcome });
    }
  }
  span.end();
}

/**
 * Service side (sdk/serve.ts): a CONSUMER span per handled message (`process <exchange>`), continuing the trace context
 * its headers carry (read by the propagators the service registered), and the context to run the handler in (the span and the message's baggage), so the handler's own
 * spans nest under it and its outgoing calls pass the context on. When a messaging instrumentation already made a span
 * of the same trace active (instrumentation-amqplib's, itself continuing the message), the span nests under that one.
 */
export function startHandlerSpan(
  service: string,
  messageType: string,
  headers: TraceCarrier,
  bus: BusDestination = { kind: 'inprocess' },
): { span: Span; ctx: Context } {
  const parent = handlerParent(extractFrom(headers as Headers));
  const attributes = messagingAttributes(bus, service, 'process');
  const span = tracer.startSpan(
    `process ${attributes['messaging.destination.name']}`,
    {
      kind: SpanKind.CONSUMER,
      attributes: { ...attributes, 'contracts.message_type': messageType },
    },
    parent,
  );
  return { span, ctx: trace.setSpan(parent, span) };
}

/**
 * The message's context, or the active one when its span belongs to the same trace (a messaging instrumentation's
 * span for this message); the active one when the message carries no valid context.
 */
function handlerParent(carried: Context): Context {
  const remote = trace.getSpanContext(carried);
  const active = context.active();
  if (remote === undefined || !trace.isSpanContextValid(remote)) return active;
  return trace.getSpanContext(active)?.traceId === remote.traceId ? active : carried;
}
