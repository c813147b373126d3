import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Kept back from a request's deadline for the reply to reach the gateway: work that ends later than this before
 * the deadline is answered too late for the caller, who has had a 504 by then.
 */
export const REPLY_MARGIN_MS = 500;

const current = new AsyncLocalStorage<number | undefined>();

/** Runs `fn` as the handling of a request with this deadline (ms since the Unix epoch; undefined: none). */
export function withRequestDeadline<T>(deadline: number | undefined, fn: () => T): T {
  return current.run(deadline, fn);
}

/** Runs `fn`, and whatever it schedules, as work of no request: background work has no request's deadline. */
export function outsideRequest<T>(fn: () => T): T {
  return current.exit(fn);
}

/**
 * How many milliseconds the request being handled has left for its work, the reply's margin taken off (0 or less:
 * none); undefined outside a request or when the gateway sent no deadline. A database or HTTP call made for the
 * request should give up after this long, so that the caller gets an answer (e.g. 503) instead of a timeout.
 */
export function requestTimeLeft(now = Date.now()): number | undefined {
  const deadline = current.getStore();
  return deadline === undefined ? undefined : deadline - REPLY_MARGIN_MS - now;
}

/** Thrown by `beforeDeadline` when the request's time for the work has run out. */
export class DeadlineReached extends Error {
  constructor() {
    super('The request has no time left for this');
    this.name = 'DeadlineReached';
  }
}

/**
 * `work`, or a DeadlineReached rejection once the request being handled has no time left for it; outside a request
 * (or without a deadline) `work` as it is. What `work` does after that is not cancelled: give it a timeout of its own.
 */
export function beforeDeadline<T>(work: Promise<T>): Promise<T> {
  const left = requestTimeLeft();
  if (left === undefined) return work;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeadlineReached()), Math.max(0, left));
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}
