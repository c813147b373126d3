import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { serviceUnavailable } from '../errors/gateway-error';
import { finalHandler, writeErrorBody } from '../http/final-handler';
import type { Logger } from '../logger';

/** Retry-After on the 503s of a stopping gateway: another instance is usually ready at once. */
export const SHUTDOWN_RETRY_AFTER_S = 1;

export function shuttingDown(): ReturnType<typeof serviceUnavailable> {
  return serviceUnavailable('The gateway is shutting down; retry the request', SHUTDOWN_RETRY_AFTER_S);
}

/**
 * One HTTP server of the host, made drainable: every request is counted until its response closes, and once
 * draining starts the server accepts no new connection, and a request that still arrives on an open keep-alive
 * connection is answered 503 with Retry-After (never passed to the pipelines).
 */
export class HttpDrain {
  private readonly open = new Set<ServerResponse>();
  private draining = false;
  private idleWaiters: Array<() => void> = [];
  /** One listener for every response ('close' calls it with the response as `this`): no closure per request. */
  private readonly onResponseClose: (this: ServerResponse) => void;

  constructor(
    private readonly server: Server,
    private readonly log?: Pick<Logger, 'warn'>,
  ) {
    const drain = this;
    this.onResponseClose = function (this: ServerResponse) {
      drain.closed(this);
    };
    // The host's express app is the server's 'request' listener; it is called from here instead.
    const listeners = server.listeners('request') as Array<(req: IncomingMessage, res: ServerResponse) => void>;
    server.removeAllListeners('request');
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      if (this.draining) return this.refuse(req, res);
      this.open.add(res);
      res.on('close', this.onResponseClose);
      // The host's app gets our final handler: its own would answer failures with an HTML stack trace.
      for (const l of listeners) (l as (req: IncomingMessage, res: ServerResponse, done: (err?: unknown) => void) => void).call(server, req, res, finalHandler(req, res, this.log));
    });
  }

  get inFlight(): number {
    return this.open.size;
  }

  /** Stops accepting: the listening socket closes and idle keep-alive connections end. */
  begin(): void {
    if (this.draining) return;
    this.draining = true;
    // Busy keep-alive connections stay open: a request the client sends on one after its answer gets the 503
    // below (with Connection: close) instead of vanishing with a closed socket.
    this.server.close();
  }

  /** Resolves when no request is in flight, or after `ms`. */
  idle(ms: number): Promise<void> {
    if (this.open.size === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      const waiter = (): void => done();
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.idleWaiters.push(waiter);
    });
  }

  /** Answers every request still open with 503 + Retry-After (those not answered by their own pipeline). */
  refuseRemaining(): void {
    for (const res of this.open) {
      if (!res.headersSent) this.answer503(res);
    }
  }

  /** Ends every connection that is left (after the last answers were written). */
  closeConnections(): void {
    this.server.closeAllConnections();
  }

  private refuse(req: IncomingMessage, res: ServerResponse): void {
    // The body is not read: drop it, and close the connection after the answer.
    req.resume();
    res.setHeader('Connection', 'close');
    this.answer503(res);
  }

  /** Written on the plain response: a refused request never reached express, so none of its helpers exist. */
  private answer503(res: ServerResponse): void {
    writeErrorBody(res, shuttingDown());
  }

  private closed(res: ServerResponse): void {
    this.open.delete(res);
    if (this.open.size === 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
    }
  }
}
