import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { serviceUnavailable } from '../errors/gateway-error';
import { writeErrorBody } from '../http/final-handler';
import type { HostServer } from '../host/port';

/** Retry-After on the 503s of a stopping gateway: another instance is usually ready at once. */
const SHUTDOWN_RETRY_AFTER_S = 1;

/**
 * How long a keep-alive connection left idle by the drain stays open: a client that sends its next request on it
 * meanwhile gets a 503 with Connection: close instead of a reset socket.
 */
const IDLE_CONNECTION_GRACE_MS = 1_000;

export function shuttingDown(): ReturnType<typeof serviceUnavailable> {
  return serviceUnavailable('The gateway is shutting down; retry the request', SHUTDOWN_RETRY_AFTER_S);
}

/**
 * One HTTP server of the host, made drainable: every request is counted until its response closes, and once
 * draining starts the server accepts no new connection, and a request that still arrives on an open keep-alive
 * connection is answered 503 with Retry-After and Connection: close (never passed to the pipelines). Answers of
 * requests in flight carry Connection: close too, and idle connections are closed only after a short grace: no
 * request sent on an open connection is lost without an answer.
 */
export class HttpDrain {
  private readonly open = new Set<ServerResponse>();
  private draining = false;
  private idleWaiters: Array<() => void> = [];
  private readonly connections = new Set<Socket>();
  /** Responses in flight that the drain marked Connection: close (unmarked if the client pipelined another request). */
  private readonly closing = new Set<ServerResponse>();
  private idleTimer?: NodeJS.Timeout;
  /** One listener for every response ('close' calls it with the response as `this`): no closure per request. */
  private readonly onResponseClose: (this: ServerResponse) => void;

  constructor(private readonly server: HostServer) {
    const drain = this;
    server.onConnection((socket: Socket) => {
      this.connections.add(socket);
      socket.once('close', () => {
        this.connections.delete(socket);
        this.wakeIfIdle();
      });
    });
    this.onResponseClose = function (this: ServerResponse) {
      drain.closed(this);
    };
    server.front((req, res) => {
      if (this.draining) {
        this.refuse(req, res);
        return true;
      }
      this.open.add(res);
      res.on('close', this.onResponseClose);
      return false;
    });
  }

  get inFlight(): number {
    return this.open.size;
  }

  /**
   * Stops accepting: the listening socket closes. Open connections end after their answer (Connection: close),
   * and those left idle after IDLE_CONNECTION_GRACE_MS.
   */
  begin(): void {
    if (this.draining) return;
    this.draining = true;
    for (const res of this.open) {
      if (res.headersSent) continue;
      res.setHeader('Connection', 'close');
      this.closing.add(res);
    }
    // Only the listening socket: an idle keep-alive connection may be carrying a request that very moment.
    this.server.stopListening();
    this.idleTimer = setTimeout(() => this.server.closeIdleConnections(), IDLE_CONNECTION_GRACE_MS);
    this.idleTimer.unref();
  }

  /** Resolves when no request is in flight and (once draining) no connection is left, or after `ms`. */
  idle(ms: number): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
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
    clearTimeout(this.idleTimer);
    this.server.closeAllConnections();
  }

  private refuse(req: IncomingMessage, res: ServerResponse): void {
    // A request pipelined behind one in flight: that answer must keep the connection open for this one's 503.
    for (const earlier of this.closing) {
      if (earlier.req.socket === req.socket && !earlier.headersSent) earlier.removeHeader('Connection');
    }
    // The body is not read: drop it, and close the connection after the answer.
    req.resume();
    res.setHeader('Connection', 'close');
    this.answer503(res);
  }

  /** Written on the plain response: a refused request never reached express, so none of its helpers exist. */
  private answer503(res: ServerResponse): void {
    writeErrorBody(res, shuttingDown());
  }

  private isIdle(): boolean {
    return this.open.size === 0 && (!this.draining || this.connections.size === 0);
  }

  private closed(res: ServerResponse): void {
    this.open.delete(res);
    this.closing.delete(res);
    this.wakeIfIdle();
  }

  private wakeIfIdle(): void {
    if (this.isIdle()) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
    }
  }
}
