import { randomUUID } from 'node:crypto';
import type { Request, Response } from 'express';

export interface Trace {
  correlationId: string;
  requestId: string;
  traceparent?: string;
}

/** A caller's correlation id is echoed only when it is short and made of safe characters (no header injection, no log forging). */
const SAFE_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const TRACEPARENT = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;
const TRACE_KEY = Symbol('contracts.trace');

/**
 * The request's trace ids, made once and set on the response at once, so that every answer,
 * errors included, carries them whichever of our policies runs first.
 */
export function traceOf(req: Request, res: Response): Trace {
  const holder = req as unknown as Record<symbol, Trace | undefined>;
  const known = holder[TRACE_KEY];
  if (known) return known;
  const given = req.headers['x-correlation-id'];
  const correlationId = typeof given === 'string' && SAFE_ID.test(given) ? given : randomUUID();
  const tp = req.headers.traceparent;
  const trace: Trace = { correlationId, requestId: randomUUID() };
  if (typeof tp === 'string' && TRACEPARENT.test(tp)) trace.traceparent = tp;
  holder[TRACE_KEY] = trace;
  res.setHeader('X-Correlation-Id', trace.correlationId);
  res.setHeader('X-Request-Id', trace.requestId);
  return trace;
}
