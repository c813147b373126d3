import { context, trace, ProxyTracerProvider, ROOT_CONTEXT, SpanKind, SpanStatusCode, type Context, type Span, type SpanContext } from '@opentelemetry/api';

/**
 * OpenTelemetry spans through @opentelemetry/api only: a no-op (nothing recorded, nothing exported) until the
 * deployment registers an SDK (docs/operations.md "Traces"). The tracer is the global provider's proxy, so an SDK
 * registered after this module loads is used from then on.
 */
export const TRACER_NAME = 'express-gateway-plugin-contracts';
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

/** The server span of one request, named by its method until the route template is known. */
export function startServerSpan(method: string, traceparent: string | undefined): Span {
  return tracer.startSpan(method, { kind: SpanKind.SERVER, attributes: { 'http.request.method': method } }, parentOf(traceparent));
}

/** Names the server span by its route template (`GET /api/users/:userId`) and ends it with the answer's status. */
export function endServerSpan(span: Span, method: string, route: string, status: number, ids: { correlationId?: string; requestId?: string }): void {
  if (span.isRecording()) {
    span.updateName(`${method} ${route}`);
    span.setAttribute('http.route', route);
    span.setAttribute('http.response.status_code', status);
    if (ids.correlationId) span.setAttribute('contracts.correlation_id', ids.correlationId);
    if (ids.requestId) span.setAttribute('contracts.request_id', ids.requestId);
    if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
  }
  span.end();
}

/** The child span of a request's bus round trip; its context is the traceparent the service gets. */
export function startBusSpan(parent: Span | undefined, messageType: string, targetService: string, busKind: string): Span {
  const ctx = parent ? trace.setSpan(ROOT_CONTEXT, parent) : ROOT_CONTEXT;
  return tracer.startSpan(`send ${messageType}`, {
    kind: SpanKind.CLIENT,
    attributes: {
      'messaging.system': busKind === 'amqp' ? 'rabbitmq' : busKind,
      'messaging.operation.type': 'send',
      'messaging.destination.name': targetService,
      'contracts.message_type': messageType,
      'contracts.target_service': targetService,
    },
  }, ctx);
}

/** Ends the bus span with how the round trip ended. */
export function endBusSpan(span: Span, outcome: string): void {
  if (span.isRecording()) {
    span.setAttribute('contracts.outcome', outcome);
    if (outcome !== 'reply') span.setStatus({ code: SpanStatusCode.ERROR, message: outcome });
  }
  span.end();
}

/**
 * Service side (sdk/serve.ts): a span per handled message, continuing the trace of the traceparent it carries, and
 * the context to run the handler in, so the handler's own spans nest under it.
 */
export function startHandlerSpan(service: string, messageType: string, traceparent: string | undefined): { span: Span; ctx: Context } {
  const remote = spanContextOf(traceparent);
  const parent = remote ? trace.setSpanContext(ROOT_CONTEXT, remote) : context.active();
  const span = tracer.startSpan(`handle ${messageType}`, {
    kind: SpanKind.SERVER,
    attributes: { 'messaging.operation.type': 'process', 'messaging.destination.name': service, 'contracts.message_type': messageType },
  }, parent);
  return { span, ctx: trace.setSpan(parent, span) };
}
