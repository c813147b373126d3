import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { onClientError } from './client-error';
import { observeRequest } from '../observability/request-observer';

/** What the host's event bus offers for its servers ('http-ready' / 'https-ready'). */
export interface ServerEvents {
  on(event: string, listener: (payload: { httpServer?: Server }) => void): unknown;
}

/**
 * Trace ids for every request the server gets, before the host's app sees it: answers that none of our policies
 * give (the host's static files, its 404s, Express's own errors) carry X-Correlation-Id and X-Request-Id too, and
 * our steps find the same ids later (traceOf makes them once per request). Every request is observed from here
 * too: metrics, the server span and the access log (plugin/observability).
 */
function traceEveryRequest(req: IncomingMessage, res: ServerResponse): void {
  observeRequest(req, res);
}

let attached = false;

/**
 * Hooks every server the host starts: trace ids on every answer, and the error body for requests Node's parser
 * refuses. Once per process (the host runs init() again on every reload).
 */
export function hookHostServers(events: ServerEvents | undefined): void {
  if (attached || !events) return;
  attached = true;
  const hook = ({ httpServer }: { httpServer?: Server }): void => {
    if (!httpServer) return;
    httpServer.prependListener('request', traceEveryRequest);
    httpServer.on('clientError', onClientError);
  };
  events.on('http-ready', hook);
  events.on('https-ready', hook);
}
