import { newTraceId } from './ids';
import { requestContext, type RequestContext, type Trace } from './context';
import type { Request, Response } from 'express';

/** A caller's correlation id is echoed only when it is short and made of safe characters (no header injection, no log forging). */
const SAFE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

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
  const trace: Trace = { correlationId, requestId: newTraceId() };
  ctx.trace = trace;
  res.setHeader('X-Correlation-Id', trace.correlationId);
  res.setHeader('X-Request-Id', trace.requestId);
  return trace;
}
