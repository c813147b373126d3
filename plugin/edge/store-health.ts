import type { Logger } from '../logger';
import type { StoreFailureMode } from '../settings/defaults';

/** `degraded`: the counter store failed or did not answer in time, and has not answered a probe since. */
export type StoreState = 'ok' | 'degraded';
/** Why a store call counted as failed (the failures metric's `reason`). */
export type StoreFailure = 'timeout' | 'error' | 'not_connected';

/** What the rate limits report (plugin/observability/metrics.ts implements it). */
export interface StoreMetrics {
  rateLimitStoreState(state: StoreState): void;
  rateLimitStoreFailure(reason: StoreFailure): void;
  /** A rate-limited request that was not counted because the store was away: let through or refused. */
  rateLimitStoreBypass(outcome: 'allowed' | 'refused'): void;
}

/** What is used of the host's Redis client: ioredis has `status` and a `ready` event; ioredis-mock, always there, has neither. */
export interface StoreClient {
  status?: string;
  ping(): Promise<unknown>;
  once?(event: 'ready', listener: () => void): unknown;
  removeListener?(event: 'ready', listener: () => void): unknown;
}

/** The ioredis status in which a command is sent at once; in any other it would wait in a queue or fail. */
const CONNECTED = new Set(['ready']);
/** Statuses of a client that had a connection and lost it (not the first connect at start, which is moments). */
const LOST = new Set(['close', 'reconnecting', 'end']);

/** While degraded, the log says so at most this often, with how many requests were let through or refused. */
export const STORE_WARNING_INTERVAL_MS = 10000;
const PROBE_INTERVAL_MS = 1000;

export interface StoreHealthOptions {
  log: Logger;
  mode: StoreFailureMode;
  /** The host's client, once it is known (undefined before: nothing can be probed or asked). */
  client: () => StoreClient | undefined;
  metrics?: StoreMetrics;
  probeIntervalMs?: number;
}

/**
 * The state of the rate-limit counter store, as a circuit breaker: the first failure (an error, no answer within the
 * timeout, or a client that is not connected) makes it degraded; while degraded no request waits for the store
 * (each is let through or refused at once, by `mode`) and a probe pings it every second; the first answer makes it
 * ok again and counting resumes. Every transition is logged and reported to the metrics.
 */
export class StoreHealth {
  private degradedSince?: number;
  private probe?: NodeJS.Timeout;
  private probePending = false;
  private bypassedSinceLog = 0;
  private bypassedTotal = 0;
  private lastLog = 0;
  private closed = false;

  constructor(private readonly options: StoreHealthOptions) {
    options.metrics?.rateLimitStoreState('ok');
  }

  /** Degraded while a failure has not been followed by an answer, or while the client says it lost its connection. */
  state(): StoreState {
    return this.degradedSince !== undefined || LOST.has(this.options.client()?.status ?? '') ? 'degraded' : 'ok';
  }

  /** When the store became degraded (undefined while ok). */
  since(): number | undefined {
    return this.degradedSince;
  }

  /**
   * Before a store call: false at once when the store is known to be away, so the request does not wait for it. A
   * client still connecting (at start, or after a blip) is given until `deadline` to be ready.
   */
  async usable(deadline: number): Promise<boolean> {
    if (this.degradedSince !== undefined) return false;
    const client = this.options.client();
    if (!client || this.disconnected() === undefined) return true;
    if (await readyBy(client, deadline)) return true;
    this.failed('not_connected', `the client is ${client.status ?? 'not connected'}`);
    return false;
  }

  /** A store call failed or timed out: degraded from now until a probe is answered. */
  failed(reason: StoreFailure, detail: string): void {
    this.options.metrics?.rateLimitStoreFailure(reason);
    if (this.degradedSince !== undefined || this.closed) return;
    this.degradedSince = Date.now();
    this.bypassedSinceLog = 0;
    this.bypassedTotal = 0;
    this.lastLog = this.degradedSince;
    this.options.metrics?.rateLimitStoreState('degraded');
    this.options.log.warn(`rate limit store unavailable (${detail}); ${this.consequence()} until it answers again`);
    this.probe = setInterval(() => this.ping(), this.options.probeIntervalMs ?? PROBE_INTERVAL_MS);
    this.probe.unref();
  }

  /** A rate-limited request that was not counted; logged in a summary at most every STORE_WARNING_INTERVAL_MS. */
  bypassed(now = Date.now()): void {
    this.options.metrics?.rateLimitStoreBypass(this.options.mode === 'open' ? 'allowed' : 'refused');
    this.bypassedSinceLog++;
    this.bypassedTotal++;
    if (now - this.lastLog < STORE_WARNING_INTERVAL_MS) return;
    this.lastLog = now;
    const verb = this.options.mode === 'open' ? 'let through uncounted' : 'refused 503';
    this.options.log.warn(
      `rate limit store still unavailable: ${this.bypassedSinceLog} requests ${verb} in the last ${Math.round(STORE_WARNING_INTERVAL_MS / 1000)} s`,
    );
    this.bypassedSinceLog = 0;
  }

  close(): void {
    this.closed = true;
    this.stopProbe();
  }

  private consequence(): string {
    return this.options.mode === 'open'
      ? 'rate-limited requests pass uncounted'
      : 'rate-limited requests are refused 503';
  }

  private disconnected(): string | undefined {
    const status = this.options.client()?.status;
    return status === undefined || CONNECTED.has(status) ? undefined : status;
  }

  private ping(): void {
    const client = this.options.client();
    if (!client) return this.recovered();
    // One probe at a time: on a stalled connection the pending one is answered first when it comes back.
    if (this.probePending || this.disconnected() !== undefined) return;
    this.probePending = true;
    Promise.resolve()
      .then(() => client.ping())
      .then(
        () => this.pingAnswered(),
        () => undefined,
      )
      .finally(() => (this.probePending = false));
  }

  private pingAnswered(): void {
    if (this.disconnected() === undefined) this.recovered();
  }

  private recovered(): void {
    if (this.degradedSince === undefined) return;
    const seconds = Math.round((Date.now() - this.degradedSince) / 1000);
    const verb = this.options.mode === 'open' ? 'let through uncounted' : 'refused 503';
    this.options.log.info(
      `rate limit store answers again after ${seconds} s (${this.bypassedTotal} requests ${verb} meanwhile); counting resumes`,
    );
    this.degradedSince = undefined;
    this.stopProbe();
    this.options.metrics?.rateLimitStoreState('ok');
  }

  private stopProbe(): void {
    if (this.probe) clearInterval(this.probe);
    this.probe = undefined;
  }
}

/** Resolves true once the client is ready, false at the deadline (or when it cannot say). */
function readyBy(client: StoreClient, deadline: number): Promise<boolean> {
  const { once, removeListener } = client;
  if (!once || !removeListener) return Promise.resolve(false);
  return new Promise((resolve) => {
    const ready = (): void => {
      clearTimeout(timer);
      resolve(true);
    };
    const timer = setTimeout(
      () => {
        removeListener.call(client, 'ready', ready);
        resolve(false);
      },
      Math.max(0, deadline - Date.now()),
    );
    once.call(client, 'ready', ready);
  });
}
