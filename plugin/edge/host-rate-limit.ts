import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { Request, Response } from 'express';

export type LimiterNext = (err?: unknown) => void;
export type Limiter = (req: Request, res: Response, next: LimiterNext) => void;

/** Options of the host's rate-limit (express-rate-limit 2.x) that we set; functions cannot come from YAML. */
export interface LimiterOptions {
  max: number;
  windowMs: number;
  keyGenerator: (req: Request) => string;
  handler: (req: Request, res: Response, next: LimiterNext) => void;
}

export type LimiterFactory = (params: Record<string, unknown>) => Limiter;

const HOST_RATE_LIMIT = 'express-gateway/lib/policies/rate-limit/rate-limit';

/**
 * The host's rate-limit implementation: express-rate-limit with a Redis store on the host's own db client (real
 * Redis when system.config.yml has `db.redis.emulate: false`, ioredis-mock in memory otherwise), so replicas that
 * share a Redis share the counters. Resolved from the host's entry module first: npm may give the plugin its own
 * copy of express-gateway, whose db module would open a second connection with nobody's settings.
 */
export function hostLimiterFactory(): LimiterFactory {
  for (const base of [require.main?.filename, join(process.cwd(), 'index.js')]) {
    if (!base) continue;
    try {
      return createRequire(base)(HOST_RATE_LIMIT) as LimiterFactory;
    } catch {
      // not resolvable from there: try the next base
    }
  }
  return require(HOST_RATE_LIMIT) as LimiterFactory;
}

/**
 * One limiter per (max, windowMs), shared by every pipeline and kept across config reloads (the host rebuilds
 * every policy on each reload; the counters live in the store, so nothing is lost either way). Contracts
 * announce their limits, so the number of distinct pairs is bounded; the oldest goes beyond MAX_LIMITERS.
 */
export class LimiterCache {
  private readonly limiters = new Map<string, Limiter>();
  private factory?: LimiterFactory;

  constructor(
    private readonly options: Pick<LimiterOptions, 'keyGenerator' | 'handler'>,
    private readonly loadFactory: () => LimiterFactory = hostLimiterFactory,
  ) {}

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
        keyGenerator: this.options.keyGenerator,
        handler: this.options.handler,
      });
      if (this.limiters.size >= MAX_LIMITERS) this.limiters.delete(this.limiters.keys().next().value as string);
      this.limiters.set(id, limiter);
    }
    return limiter;
  }
}

const MAX_LIMITERS = 256;

/** A store failure is logged at most this often: during a Redis outage every request would log otherwise. */
const STORE_WARNING_INTERVAL_MS = 10000;

/**
 * What contract-rate-limit keeps across config reloads (the host rebuilds every policy on each): the host's limiters
 * and when a store failure was last logged. The runtime holds one.
 */
export class RateLimitState {
  private cache?: LimiterCache;
  private lastStoreWarning = 0;

  /** The limiters, made on first use with the step's hooks (the same functions on every reload). */
  limiters(hooks: Pick<LimiterOptions, 'keyGenerator' | 'handler'>): LimiterCache {
    this.cache ??= new LimiterCache(hooks);
    return this.cache;
  }

  /** True when a store failure should be logged now, at most once per interval. */
  storeWarningDue(now = Date.now()): boolean {
    if (now - this.lastStoreWarning < STORE_WARNING_INTERVAL_MS) return false;
    this.lastStoreWarning = now;
    return true;
  }
}
