import { newTraceId } from './ids';
import { requestContext, type RequestContext, type Trace } from './context';
import type { Request, Response } from 'express';

/** A caller's correlation id is echoed only when it is short and made of safe characters (no header injection, no log forging). */
const SAFE_ID = /^[A-Za-z0-9._:-]{1,128}$/;
/** W3C Trace Context: version-traceid-parentid-flags, lower-case hex; later versions may append `-…` fields. */
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}(-.*)?$/;
const TRACEPARENT_MAX = 512;

/**
 * The request's trace ids, made once and set on the response at once, so that every answer,
 * errors included, carries them whichever of our policies runs first.
 */
export function traceOf(req: Request, res: Response): Trace {
  return traceIn(requestContext(req), req, res);
}

/** traceOf for a step that has the request's context at hand (the runner). */
export function traceIn(ctx: RequestContext, req: Request, res: Response): Trace {
  const known = ctx.trace;
  if (known) return known;
  const given = req.headers['x-correlation-id'];
  const correlationId = typeof given === 'string' && SAFE_ID.test(given) ? given : newTraceId();
  const tp = req.headers.traceparent;
  const trace: Trace = { correlationId, requestId: newTraceId() };
  const traceparent = validTraceparent(tp);
  if (traceparent) trace.traceparent = traceparent;
  ctx.trace = trace;
  res.setHeader('X-Correlation-Id', trace.correlationId);
  res.setHeader('X-Request-Id', trace.requestId);
  return trace;
}

/**
 * A traceparent worth passing on, or undefined (W3C Trace Context §3.2): version ff and all-zero trace or parent ids
 * are invalid; version 00 has exactly four fields; of a later version only the four fields we understand are kept.
 */
export function validTraceparent(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.length > TRACEPARENT_MAX) return undefined;
  const m = TRACEPARENT.exec(value);
  if (!m) return undefined;
  const [, version, traceId, parentId, rest] = m;
  if (version === 'ff' || /^0+$/.test(traceId!) || /^0+$/.test(parentId!)) return undefined;
  if (version === '00') return rest === undefined ? value : undefined;
  return value.slice(0, 55);
}
