import {
  context,
  trace,
  ProxyTracerProvider,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  type Context,
  type Span,
  type SpanContext,
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

/** W3C traceparent of version 00, already checked by validTraceparent (plugin/request/trace.ts). */
const TRACEPARENT = /^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})/;

/** The span context a traceparent header names, as a remote parent. */
export function spanContextOf(traceparent: string | undefined): SpanContext | undefined {
  const m = traceparent === undefined ? null : TRACEPARENT.exec(traceparent);
  if (!m) return undefined;
  return { traceId: m[1]!, spanId: m[2]!, traceFlags: parseInt(m[3]!, 16) & 1, isRemote: true };
}

/** The traceparent header of a span, or undefined when it has no valid context (no SDK and no caller's trace). */
export function traceparentOf(span: Span): string | undefined {
  return headerOf(span.spanContext());
}

/** The caller's traceparent as a span continuing it would pass it on (version 00, sampled flag only); no SDK. */
export function passedOn(traceparent: string | undefined): string | undefined {
  const sc = spanContextOf(traceparent);
  return sc && headerOf(sc);
}

function headerOf(sc: SpanContext): string | undefined {
  if (!trace.isSpanContextValid(sc)) return undefined;
  return `00-${sc.traceId}-${sc.spanId}-${sc.traceFlags & 1 ? '01' : '00'}`;
}

/**
 * The context a request's server span continues: the active one when an SDK's HTTP instrumentation already made a
 * span for this request, else the caller's traceparent, else a new trace.
 */
function parentOf(traceparent: string | undefined): Context {
  const active = context.active();
  if (trace.getSpan(active)) return active;
  const remote = spanContextOf(traceparent);
  return remote ? trace.setSpanContext(ROOT_CONTEXT, remote) : ROOT_CONTEXT;
}

/** What a server span reads of its request at the start (an IncomingMessage fits). */
export interface ServerRequest {
  method?: string;
  url?: string;
  headers: { host?: string; 'user-agent'?: string };
  socket: { localPort?: number; encrypted?: boolean };
}

/** Host header → server.address and server.port (the port the caller named, else the one it reached). */
function serverOf(host: string | undefined, localPort: number | undefined): { address?: string; port?: number } {
  const m = host === undefined ? null : /^(\[[^\]]*\]|[^:]*)(?::(\d{1,5}))?$/.exec(host);
  if (!m || m[1] === '') return localPort === undefined ? {} : { port: localPort };
  const port = m[2] === undefined ? localPort : Number(m[2]);
  return { address: m[1]!.replace(/^\[|\]$/g, ''), ...(port !== undefined ? { port } : {}) };
}

/**
 * The server span of one request, named by its method until the route template is known. Its attributes follow the
 * OpenTelemetry HTTP server conventions; they are worked out only when the span records (an SDK is registered).
 * `pathOf` gives url.path from the request's URL (the observer's: without the query string, as the access log).
 */
export function startServerSpan(
  req: ServerRequest,
  traceparent: string | undefined,
  pathOf: (url: string | undefined) => string,
): Span {
  const method = req.method ?? 'OTHER';
  const span = tracer.startSpan(
    method,
    { kind: SpanKind.SERVER, attributes: { 'http.request.method': method } },
    parentOf(traceparent),
  );
  if (!span.isRecording()) return span;
  const server = serverOf(req.headers.host, req.socket.localPort);
  span.setAttribute('url.path', pathOf(req.url));
  span.setAttribute('url.scheme', req.socket.encrypted ? 'https' : 'http');
  if (server.address !== undefined) span.setAttribute('server.address', server.address);
  if (server.port !== undefined) span.setAttribute('server.port', server.port);
  const agent = req.headers['user-agent'];
  if (agent !== undefined) span.setAttribute('user_agent.original', agent);
  return span;
}

/** How a request ended, besides its status. */
export interface ServerSpanEnd {
  correlationId?: string;
  requestId?: string;
  /** The caller's address as the host saw it (its trust proxy setting applied). */
  clientAddress?: string;
}

/**
 * Names the server span by its route template (`GET /api/users/:userId`) and ends it with the answer's status; a 5xx
 * sets error.type to the status code, as the conventions ask of a server.
 */
export function endServerSpan(span: Span, method: string, route: string, status: number, end: ServerSpanEnd): void {
  if (span.isRecording()) {
    span.updateName(`${method} ${route}`);
    span.setAttribute('http.route', route);
    span.setAttribute('http.response.status_code', status);
    if (end.clientAddress) span.setAttribute('client.address', end.clientAddress);
    if (end.correlationId) span.setAttribute('contracts.correlation_id', end.correlationId);
    if (end.requestId) span.setAttribute('contracts.request_id', end.requestId);
    if (status >= 500) {
      span.setAttribute('error.type', String(status));
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
  }
  span.end();
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
 * The child span of a request's bus round trip (PRODUCER, `publish <exchange>`), from the send to the reply; its
 * context is the traceparent the service gets.
 */
export function startBusSpan(
  parent: Span | undefined,
  messageType: string,
  targetService: string,
  bus: BusDestination,
): Span {
  const ctx = parent ? trace.setSpan(ROOT_CONTEXT, parent) : ROOT_CONTEXT;
  const attributes = messagingAttributes(bus, targetService, 'publish');
  return tracer.startSpan(
    `publish ${attributes['messaging.destination.name']}`,
    {
      kind: SpanKind.PRODUCER,
      attributes: { ...attributes, 'contracts.message_type': messageType, 'contracts.target_service': targetService },
    },
    ctx,
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
 * Service side (sdk/serve.ts): a CONSUMER span per handled message (`process <exchange>`), continuing the trace of
 * the traceparent it carries, and the context to run the handler in, so the handler's own spans nest under it.
 */
export function startHandlerSpan(
  service: string,
  messageType: string,
  traceparent: string | undefined,
  bus: BusDestination = { kind: 'inprocess' },
): { span: Span; ctx: Context } {
  const remote = spanContextOf(traceparent);
  const parent = remote ? trace.setSpanContext(ROOT_CONTEXT, remote) : context.active();
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
