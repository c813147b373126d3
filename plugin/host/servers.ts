import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { onClientError } from '../http/client-error';
import type { Logger } from '../logger';

/** What the host's event bus offers for its servers ('http-ready' / 'https-ready'). */
export interface ServerEvents {
  on(event: string, listener: (payload: { httpServer?: Server }) => void): unknown;
}

type RequestListener = (req: IncomingMessage, res: ServerResponse) => void;
/** Sees a request first, then hands it to `handle` (the server's own listeners: the host's app). */
export type ObserveRequest = (req: IncomingMessage, res: ServerResponse, handle: RequestListener) => void;

/** How long the API's servers wait for a request and how many connections they hold (plugin/settings/edge.ts). */
export interface ServerLimits {
  headersTimeoutMs: number;
  requestReceiveTimeoutMs: number;
  maxConnections?: number;
}

/**
 * How often Node looks for requests past their headers or receive timeout. Its default (30 s) would let a 10 s
 * timeout run to 40 s; a look costs one pass over the connections still receiving a request.
 */
const TIMEOUT_CHECK_INTERVAL_MS = 500;

/** At most one log line per this long about connections closed over the cap. */
const DROP_LOG_INTERVAL_MS = 60_000;

/**
 * Hooks every server the host starts: `observe` sees every request before the host's app does (trace ids on every
 * answer, even those none of our policies give, and metrics, the server span and the access log:
 * plugin/observability), requests Node's parser refuses or that arrive too slowly get the error body, and the
 * server gets the timeouts and connection cap of `limits`. Once per process (manifest.ts).
 */
export function hookHostServers(
  events: ServerEvents,
  observe: ObserveRequest,
  limits: ServerLimits,
  log?: Pick<Logger, 'warn'>,
): void {
  const hook = ({ httpServer }: { httpServer?: Server }): void => {
    if (!httpServer) return;
    observeRequests(httpServer, observe);
    httpServer.on('clientError', onClientError);
    applyServerLimits(httpServer, limits, log);
  };
  events.on('http-ready', hook);
  events.on('https-ready', hook);
}

/**
 * The server's request listeners (the host's app) are handed each request by `observe`, which runs them in the
 * request's trace context (plugin/observability/request-observer.ts): a listener of its own, before them, could not.
 */
function observeRequests(server: Server, observe: ObserveRequest): void {
  const listeners = server.listeners('request') as RequestListener[];
  server.removeAllListeners('request');
  const handle: RequestListener = (req, res) => {
    for (const listener of listeners) listener.call(server, req, res);
  };
  server.on('request', (req: IncomingMessage, res: ServerResponse) => observe(req, res, handle));
}

/**
 * Node enforces both timeouts itself (its 408 reaches onClientError, which answers in the error body) and closes
 * connections over maxConnections as they are accepted, before a byte is read.
 */
function applyServerLimits(server: Server, limits: ServerLimits, log?: Pick<Logger, 'warn'>): void {
  server.headersTimeout = limits.headersTimeoutMs;
  server.requestTimeout = limits.requestReceiveTimeoutMs;
  if (limits.maxConnections !== undefined) {
    server.maxConnections = limits.maxConnections;
    let lastLine = 0;
    server.on('drop', () => {
      const now = Date.now();
      if (now - lastLine < DROP_LOG_INTERVAL_MS) return;
      lastLine = now;
      log?.warn(`http: ${limits.maxConnections} connections are open (maxConnections); new ones are closed at once`);
    });
  }
  checkTimeoutsEvery(server, TIMEOUT_CHECK_INTERVAL_MS);
}

/**
 * The check interval is an option of http.createServer, which the host calls; Node starts the checks when the server
 * starts listening, in a 'listening' listener that restarts them with the server's current interval when called
 * again. When this Node has no such listener, its own interval stays (the timeouts then apply up to 30 s late).
 */
function checkTimeoutsEvery(server: Server, ms: number): void {
  const restart = server.listeners('listening').find((l) => l.name === 'setupConnectionsTracking');
  if (!restart) return;
  (server as Server & { connectionsCheckingInterval: number }).connectionsCheckingInterval = ms;
  (restart as (this: Server) => void).call(server);
}
