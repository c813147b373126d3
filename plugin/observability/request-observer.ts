import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request, Response } from 'express';
import { requestContext, type Observed } from '../request/context';
import { isKnownCode } from '../errors/codes';
import { errorCodeOf } from './error-code';
import { RouteLabels } from './route-label';
import type { GatewayMetrics } from './metrics';
import { context, trace, type Context } from '@opentelemetry/api';
import { endServerSpan, extractFrom, startServerSpan, tracing, type ServerRequest } from './tracing';
import { W3C_FALLBACK } from './w3c';
import { traceOf } from '../request/trace';
import { pathOnly, type AccessLog } from '../logging/access-log';
import { redact } from '../logging/redact';
import { spanIdsOf } from '../logging/structured';

/** Seen by the status label when the caller went away before the answer was complete (nginx's convention). */
const CLIENT_CLOSED = 499;

/** What handles a request after the observer: the host's listeners (plugin/host/servers.ts). */
export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void;

/** What is done with each request the host's servers get besides its server span: metrics, the access log. */
export interface ObserverOptions {
  metrics?: GatewayMetrics;
  accessLog?: AccessLog;
}

/**
 * Observes every request the host's servers get (plugin/host/servers.ts), before the host's app. The answer is
 * counted when the response closes, by one listener per observer (no closure per request). The runtime owns one.
 */
export class RequestObserver {
  private options: ObserverOptions = {};
  /** The route templates it labels requests with; the metrics' deprecated-route counter shares them. */
  readonly labels = new RouteLabels();
  private readonly answered: (this: ServerResponse) => void;

  constructor() {
    const observer = this;
    this.answered = function (this: ServerResponse) {
      answered(this, observer.options, observer.labels);
    };
  }

  /** What is done with each answer from now on (set by Observability). */
  setOptions(next: ObserverOptions): void {
    this.options = next;
  }

  /**
   * Sees a request, then hands it to `handle` (the host's app), in the server span's context when there is one: the
   * spans of what the request does (the bus round trip, a library's instrumented calls) nest under it.
   */
  readonly observe = (req: IncomingMessage, res: ServerResponse, handle: RequestHandler): void => {
    traceOf(req as Request, res as Response);
    // No span while no SDK is registered: it would record nothing.
    const span = tracing() ? startServerSpan(req as ServerRequest, urlPath, W3C_FALLBACK) : undefined;
    requestContext(req as Request).observed = { start: performance.now(), span };
    this.options.metrics?.requestStarted();
    // First: the HTTP instrumentation ends its server span on 'close' too, and the route must be on it before.
    res.prependListener('close', this.answered);
    if (span?.own) context.with(span.ctx, handle, undefined, req, res);
    else handle(req, res);
  };
}

/** url.path of a server span: as the access log writes the path (no query string, credentials blanked). */
const urlPath = (url: string | undefined): string => redact(pathOnly(url));

/**
 * The context of a request, for the spans of its steps (the bus round trip): its server span's, else (no SDK) the
 * trace context and baggage the caller sent, which the bus passes on.
 */
export function traceContextOf(req: Request): Context {
  const observed = requestContext(req).observed;
  return observed?.span?.ctx ?? callerContext(req, observed);
}

function callerContext(req: IncomingMessage, observed: Observed | undefined): Context {
  if (!observed) return extractFrom(req.headers, W3C_FALLBACK);
  observed.caller ??= extractFrom(req.headers, W3C_FALLBACK);
  return observed.caller;
}

function answered(res: ServerResponse, options: ObserverOptions, labels: RouteLabels): void {
  const req = res.req as Request;
  const state = requestContext(req);
  const observed = state.observed;
  if (!observed) return;
  const seconds = (performance.now() - observed.start) / 1000;
  const status = res.writableFinished ? res.statusCode : CLIENT_CLOSED;
  const route = labels.of(req);
  const method = req.method ?? 'OTHER';
  if (observed.span)
    endServerSpan(observed.span, method, route, status, {
      ...state.trace,
      clientAddress: req.ip ?? req.socket?.remoteAddress,
    });
  const found = errorCodeOf(res);
  const code = found === undefined || isKnownCode(found) ? found : 'OTHER';
  const { metrics, accessLog } = options;
  if (metrics) {
    metrics.httpAnswered(route, method, status, seconds);
    if (code !== undefined) metrics.errorAnswered(code, status, route);
  }
  if (accessLog) {
    accessLog({
      method,
      route,
      path: redact(pathOnly(req.originalUrl ?? req.url)),
      status,
      duration: Math.round(seconds * 10_000) / 10,
      correlationId: state.trace?.correlationId,
      requestId: state.trace?.requestId,
      service: state.run.resolved?.contract.targetService,
      code,
      // No span without an SDK: the caller's context then, as the non-recording span continuing it would have had.
      ...spanIdsOf(trace.getSpanContext(observed.span?.ctx ?? callerContext(req, observed))),
    });
  }
}
