import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request } from 'express';
import { requestState } from '../request/state';
import { isKnownCode } from '../errors';
import { errorCodeOf } from './error-code';
import { routeLabelOf } from './route-label';
import type { GatewayMetrics } from './metrics';

/** Seen by the status label when the caller went away before the answer was complete (nginx's convention). */
export const CLIENT_CLOSED = 499;

interface Observed {
  /** performance.now() when the server got the request. */
  start: number;
}

declare module '../request/state' {
  interface RequestState {
    observed?: Observed;
  }
}

/** What is done with each request the host's servers get: counted in metrics (if any). */
export interface ObserverOptions {
  metrics?: GatewayMetrics;
}

let options: ObserverOptions = {};

/** Set by the runtime once per process; until then (and without metrics) requests are not observed. */
export function setObserver(next: ObserverOptions): void {
  options = next;
}

/**
 * Called for every request the host's servers get (plugin/http/host-servers.ts), before the host's app. The answer
 * is counted when the response closes, by one shared listener (no closure per request).
 */
export function observeRequest(req: IncomingMessage, res: ServerResponse): void {
  const metrics = options.metrics;
  if (!metrics) return;
  requestState(req as Request).observed = { start: performance.now() };
  metrics.inFlight.inc();
  res.on('close', answered);
}

function answered(this: ServerResponse): void {
  const req = this.req;
  const observed = requestState(req as Request).observed;
  const metrics = options.metrics;
  if (!observed || !metrics) return;
  metrics.inFlight.dec();
  const seconds = (performance.now() - observed.start) / 1000;
  const status = this.writableFinished ? this.statusCode : CLIENT_CLOSED;
  const route = routeLabelOf(req);
  metrics.httpAnswered(route, req.method ?? 'OTHER', status, seconds);
  const code = errorCodeOf(this);
  if (code !== undefined) metrics.errorAnswered(isKnownCode(code) ? code : 'OTHER', status, route);
}
