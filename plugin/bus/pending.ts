import type { Reply } from './transport';

/**
 * The longest wait a timer takes as it is (Node's setTimeout turns anything longer into 1 ms, an instant 504); far
 * below RabbitMQ's cap on a message's expiration.
 */
export const MAX_WAIT_MS = 2 ** 31 - 1;

/** A request's timeout as a timer delay and message expiration: a whole number of ms in 1..MAX_WAIT_MS. */
export function waitMs(timeoutMs: number): number {
  if (!(timeoutMs >= 1)) return 1; // NaN, 0 and negatives: at once
  return Math.min(MAX_WAIT_MS, Math.ceil(timeoutMs));
}

/** A request waiting for its reply; its timer is the deadline (504). */
export interface PendingRequest {
  service: string;
  timer: NodeJS.Timeout;
  resolve(reply: Reply): void;
  reject(err: Error): void;
}

/**
 * The gateway side's requests in flight, by the id their reply comes back with. Whatever settles a request first
 * (its reply, its deadline, a return, a lost connection) takes it out, so each settles once.
 */
export class PendingRequests<P extends PendingRequest = PendingRequest> {
  private readonly byId = new Map<string, P>();

  add(id: string, request: P): void {
    this.byId.set(id, request);
  }

  /** The request still waiting under `id`, left in place. */
  get(id: string | undefined): P | undefined {
    return id === undefined ? undefined : this.byId.get(id);
  }

  /** Removes the request and stops its timer; undefined when it has already settled (a late or unknown reply). */
  take(id: string | undefined): P | undefined {
    if (id === undefined) return undefined;
    const p = this.byId.get(id);
    if (!p) return undefined;
    this.byId.delete(id);
    clearTimeout(p.timer);
    return p;
  }

  /** Rejects the requests in flight that `which` picks, each with its own error (a reply queue of one service lost). */
  failWhere(which: (p: P) => boolean, error: (p: P) => Error): void {
    for (const [id, p] of this.byId) {
      if (!which(p)) continue;
      this.byId.delete(id);
      clearTimeout(p.timer);
      p.reject(error(p));
    }
  }

  /** Rejects every request in flight with its own error (a lost channel, a closing transport, an abort). */
  failAll(error: (p: P) => Error): void {
    for (const [id, p] of this.byId) {
      this.byId.delete(id);
      clearTimeout(p.timer);
      p.reject(error(p));
    }
  }
}
