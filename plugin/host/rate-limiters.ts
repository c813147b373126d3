import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { Logger } from '../logger';
import { errorMessage } from '../errors/describe';
import type { StoreFailureMode } from '../settings/defaults';
import { StoreHealth, type StoreClient, type StoreMetrics } from '../edge/store-health';

type LimiterNext = (err?: unknown) => void;
/** The host's limiter is an Express middleware; we hand it a Tally (below) for both the request and the response. */
export type Limiter = (req: Tally, res: Tally, next: LimiterNext) => void;

/** Options of the host's rate-limit (express-rate-limit 2.x) that we set; functions cannot come from YAML. */
export interface LimiterOptions {
  max: number;
  windowMs: number;
  keyGenerator: (req: Tally, res: Tally) => string;
  handler: (req: Tally, res: Tally, next: LimiterNext) => void;
}

export type LimiterFactory = (params: Record<string, unknown>) => Limiter;

/**
 * What the host's limiter reads and writes in place of the real request and response: the key, the headers it
 * sets, whether it found the caller over the limit, and its `rateLimit` record. A limiter whose store answers after
 * the request has moved on (a timeout) then writes here, never into a response that is already sent.
 */
export class Tally {
  readonly headers: Array<[string, unknown]> = [];
  over = false;
  rateLimit?: { resetTime?: unknown };
  constructor(readonly key: string) {}
  setHeader(name: string, value: unknown): void {
    this.headers.push([name, value]);
  }
}

const TALLY_HOOKS: Pick<LimiterOptions, 'keyGenerator' | 'handler'> = {
  keyGenerator: (_req, tally) => tally.key,
  handler: (_req, tally, next) => {
    tally.over = true;
    next();
  },
};

const HOST_RATE_LIMIT = 'express-gateway/lib/policies/rate-limit/rate-limit';
const HOST_DB = 'express-gateway/lib/db';

/**
 * The host's rate-limit implementation: express-rate-limit with a Redis store on the host's own db client (real
 * Redis when system.config.yml has `db.redis.emulate: false`, ioredis-mock in memory otherwise), so replicas that
 * share a Redis share the counters. Resolved from the host's entry module first: npm may give the plugin its own
 * copy of express-gateway, whose db module would open a second connection with nobody's settings.
 */
function hostLimiterFactory(): LimiterFactory {
  return hostModule<LimiterFactory>(HOST_RATE_LIMIT);
}

/** The host's Redis client, which the host's limiter counts in (the same resolution as hostLimiterFactory). */
function hostStoreClient(): StoreClient {
  return hostModule<StoreClient>(HOST_DB);
}

function hostModule<T>(id: string): T {
  for (const base of [require.main?.filename, join(process.cwd(), 'index.js')]) {
    if (!base) continue;
    try {
      return createRequire(base)(id) as T;
    } catch {
      // not resolvable from there: try the next base
    }
  }
  return require(id) as T;
}

/**
 * One limiter per (max, windowMs), shared by every pipeline and kept across config reloads (the host rebuilds
 * every policy on each reload; the counters live in the store, so nothing is lost either way). Contracts
 * announce their limits, so the number of distinct pairs is bounded; the oldest goes beyond MAX_LIMITERS.
 */
export class LimiterCache {
  private readonly limiters = new Map<string, Limiter>();
  private factory?: LimiterFactory;

  constructor(private readonly loadFactory: () => LimiterFactory = hostLimiterFactory) {}

  limiter(max: number, windowMs: number): Limiter {
    const id = `${max}/${windowMs}`;
    let limiter = this.limiters.get(id);
    if (!limiter) {
      this.factory ??= this.loadFactory();
      limiter = this.factory({
        max,
        windowMs,
        // The host's defaults delay every request after the first by a second per hit: never here.
        delayAfter: 0,
        delayMs: 0,
        headers: true,
        ...TALLY_HOOKS,
      });
      if (this.limiters.size >= MAX_LIMITERS) this.limiters.delete(this.limiters.keys().next().value as string);
      this.limiters.set(id, limiter);
    }
    return limiter;
  }
}

const MAX_LIMITERS = 256;

/** What counting one request came to. */
export type CountOutcome =
  /** The store answered: the limiter's headers, and whether the caller is over the limit. */
  | { kind: 'counted'; headers: ReadonlyArray<[string, unknown]>; over: boolean; resetTime?: unknown }
  /** The store is away (failed, too slow, or known to be down): not counted. */
  | { kind: 'unavailable' };

export interface RateLimitStateOptions {
  log: Logger;
  mode: StoreFailureMode;
  /** How long one request waits for the store; past it the store counts as failed. */
  timeoutMs: number;
  metrics?: StoreMetrics;
  loadFactory?: () => LimiterFactory;
  loadClient?: () => StoreClient;
}

/**
 * What contract-rate-limit keeps across config reloads (the host rebuilds every policy on each): the host's
 * limiters and the store's health. The runtime holds one. Every count is bounded by our own timeout, whatever the
 * host's Redis client is configured to do (its retries and offline queue can hold a command for many seconds).
 */
export class RateLimitState {
  readonly store: StoreHealth;
  private cache?: LimiterCache;
  private client?: StoreClient;

  constructor(private readonly options: RateLimitStateOptions) {
    this.store = new StoreHealth({
      log: options.log,
      mode: options.mode,
      metrics: options.metrics,
      client: () => this.client,
    });
  }

  /**
   * Takes the host's client now, once the host runs, so /health shows a store that is not connected before any
   * request is counted. Outside the host (no client to be had) the store is judged by the counts alone.
   */
  attachHost(): void {
    try {
      this.client ??= (this.options.loadClient ?? hostStoreClient)();
    } catch (err) {
      this.options.log.debug(`rate limit store client not available yet: ${errorMessage(err)}`);
    }
  }

  /** Counts one request of `key` against (max, windowMs), waiting for the store at most timeoutMs. */
  async count(key: string, max: number, windowMs: number): Promise<CountOutcome> {
    const { store } = this;
    const deadline = Date.now() + this.options.timeoutMs;
    if (!(await store.usable(deadline))) return this.bypass();
    this.cache ??= new LimiterCache(this.options.loadFactory);
    const tally = new Tally(key);
    let timer: NodeJS.Timeout | undefined;
    const answered = new Promise<unknown>((resolve) => {
      try {
        this.cache!.limiter(max, windowMs)(tally, tally, resolve);
      } catch (err) {
        resolve(err ?? new Error('the limiter failed'));
      }
    });
    const late = new Promise<typeof TIMED_OUT>((resolve) => {
      timer = setTimeout(() => resolve(TIMED_OUT), Math.max(0, deadline - Date.now()));
    });
    const err = await Promise.race([answered, late]);
    clearTimeout(timer);
    if (err === TIMED_OUT) {
      store.failed('timeout', `no answer within ${this.options.timeoutMs} ms`);
      return this.bypass();
    }
    if (err !== undefined && err !== null) {
      store.failed('error', errorMessage(err));
      return this.bypass();
    }
    return { kind: 'counted', headers: tally.headers, over: tally.over, resetTime: tally.rateLimit?.resetTime };
  }

  close(): void {
    this.store.close();
  }

  private bypass(): CountOutcome {
    this.store.bypassed();
    return { kind: 'unavailable' };
  }
}

const TIMED_OUT = Symbol('timed out');
