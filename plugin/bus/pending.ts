import type { Reply } from './transport';
import { gatewayTimeout } from '../errors/gateway-error';

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

/** A request waiting for its reply; past its deadline it is answered 504 with `timeoutMs`. */
export interface PendingRequest {
  service: string;
  /** The timeout the request was sent with, as the 504 names it. */
  timeoutMs: number;
  /** performance.now() past which nobody waits for the reply; set by PendingRequests.add. */
  due?: number;
  resolve(reply: Reply): void;
  reject(err: Error): void;
}

/** Rejects a request whose deadline passed (504); a transport may add its own bookkeeping. */
export type Expire<P> = (p: P) => void;

/** The default expiry: 504, naming the request's timeout. */
export const timedOut: Expire<PendingRequest> = (p) => p.reject(gatewayTimeout(p.timeoutMs));

/**
 * The gateway side's requests in flight, by the id their reply comes back with. Whatever settles a request first
 * (its reply, its deadline, a return, a lost connection) takes it out, so each settles once.
 *
 * Deadlines: one timer for all of them, not one each (a Timeout per request is an object that outlives the wait,
 * bench/REPORT.md). Requests of one wait are kept in a lane, a Map in the order they were sent, hence of their
 * deadlines; the timer is armed for the earliest head of a lane and, when it fires, expires each lane's due heads.
 */
export class PendingRequests<P extends PendingRequest = PendingRequest> {
  private readonly byId = new Map<string, P>();
  /** Per wait in ms, the requests waiting that long, oldest first. */
  private readonly lanes = new Map<number, Map<string, P>>();
  private timer: NodeJS.Timeout | undefined;
  /** When the timer fires (performance.now()); Infinity when it is not armed. */
  private armedFor = Infinity;

  constructor(private readonly expire: Expire<P> = timedOut) {}

  /** Waits for the reply under `id` until `waitMs(request.timeoutMs)` from now. */
  add(id: string, request: P): void {
    const wait = waitMs(request.timeoutMs);
    const due = performance.now() + wait;
    request.due = due;
    this.byId.set(id, request);
    let lane = this.lanes.get(wait);
    if (lane === undefined) this.lanes.set(wait, (lane = new Map()));
    lane.set(id, request);
    if (due < this.armedFor) this.arm(due);
  }

  /** The request still waiting under `id`, left in place. */
  get(id: string | undefined): P | undefined {
    return id === undefined ? undefined : this.byId.get(id);
  }

  /** Removes the request; undefined when it has already settled (a late or unknown reply). */
  take(id: string | undefined): P | undefined {
    if (id === undefined) return undefined;
    const p = this.byId.get(id);
    if (!p) return undefined;
    this.byId.delete(id);
    this.lanes.get(waitMs(p.timeoutMs))?.delete(id);
    if (this.byId.size === 0) this.disarm();
    return p;
  }

  /** Rejects the requests in flight that `which` picks, each with its own error (a reply queue of one service lost). */
  failWhere(which: (p: P) => boolean, error: (p: P) => Error): void {
    for (const p of this.takeWhere(which)) p.reject(error(p));
  }

  /** Removes and returns the requests in flight that `which` picks, leaving them unsettled. */
  takeWhere(which: (p: P) => boolean): P[] {
    const taken: P[] = [];
    for (const [id, p] of this.byId) {
      if (!which(p)) continue;
      this.byId.delete(id);
      this.lanes.get(waitMs(p.timeoutMs))?.delete(id);
      taken.push(p);
    }
    if (this.byId.size === 0) this.disarm();
    return taken;
  }

  /** Rejects every request in flight with its own error (a lost channel, a closing transport, an abort). */
  failAll(error: (p: P) => Error): void {
    const all = [...this.byId.values()];
    this.byId.clear();
    this.lanes.clear();
    this.disarm();
    for (const p of all) p.reject(error(p));
  }

  private arm(at: number): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.armedFor = at;
    // Rounded up: the timer must not fire before the deadline (a 504 never comes early).
    this.timer = setTimeout(this.fire, Math.max(1, Math.ceil(at - performance.now())));
  }

  private disarm(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.armedFor = Infinity;
  }

  /** Expires every request whose deadline has passed, then arms the timer for the next deadline. */
  private readonly fire = (): void => {
    this.timer = undefined;
    this.armedFor = Infinity;
    const now = performance.now();
    const expired: P[] = [];
    let next = Infinity;
    for (const [wait, lane] of this.lanes) {
      for (const [id, p] of lane) {
        if (p.due! > now) {
          next = Math.min(next, p.due!);
          break;
        }
        lane.delete(id);
        this.byId.delete(id);
        expired.push(p);
      }
      if (lane.size === 0) this.lanes.delete(wait);
    }
    if (next !== Infinity) this.arm(next);
    for (const p of expired) this.expire(p);
  };
}
