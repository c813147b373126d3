import type { Request, Response } from 'express';
import { schema } from './schema';
import { traceOf } from '../../plugin/request/trace';
import { requestState } from '../../plugin/request/state';
import { sendError } from '../../plugin/http/respond';
import type { Runtime } from '../../plugin/runtime';
import { contractAtHand, contractOnceRead, routeOf, type ResolvedContract, type RouteAction } from '../../plugin/pipeline/resolve-contract';
import { resolveAuthConfig } from '../../plugin/auth/auth-config';
import type { Contract } from '../../plugin/contracts/types';
import type { LimiterOptions } from '../../plugin/edge/host-rate-limit';
import { callerKey, counterKey, limitFor, retryAfterSeconds, tooManyRequests, type AppliedLimit, type ExplicitLimit } from '../../plugin/edge/rate-limit';
import { errorMessage } from '../../plugin/errors';
import { runner, type Stage } from '../../plugin/lifecycle/runner';

export type ContractRateLimitAction = RouteAction & ExplicitLimit;

interface Counted {
  key: string;
  limit: AppliedLimit;
}

declare module '../../plugin/request/state' {
  interface RequestState {
    /** The caller's counter key and limit, worked out just before the host's limiter asks for them. */
    counted?: Counted;
  }
}

function countedOf(req: Request): Counted {
  // Set by this policy's own step just before the host's limiter runs.
  return requestState(req).counted!;
}

/** The host's limiter calls these; the key and limit were worked out just before (counted below). */
const limiterHooks: Pick<LimiterOptions, 'keyGenerator' | 'handler'> = {
  keyGenerator: (req) => countedOf(req).key,
  handler: (req, res, next) => {
    const reset = (req as Request & { rateLimit?: { resetTime?: unknown } }).rateLimit?.resetTime;
    sendError(res, tooManyRequests(retryAfterSeconds(reset, countedOf(req).limit.windowMs)), traceOf(req, res).correlationId);
    // Settles the counting stage; the runner goes no further once the request is answered.
    next();
  },
};

/**
 * `contract-rate-limit`: the host's rate-limit (express-rate-limit on the host's Redis store, see
 * plugin/edge/host-rate-limit.ts) with what YAML cannot give it: the limit of the request's contract or the
 * gateway-wide one, a key of the verified caller (or the client address), the 429 error body, and no delay.
 * It runs before jwt-dev-auth, so it asks the shared token verifier itself; the verified token is cached there and
 * jwt-dev-auth finds it again without a second verification.
 * A store that fails lets the request through (logged): a Redis outage must not become an API outage.
 * The limiters and the store warnings are the runtime's (runtime.rateLimits), so they outlive a config reload.
 */
export function contractRateLimitPolicy(runtime: Runtime) {
  return { name: 'contract-rate-limit', schema, policy: (action?: ContractRateLimitAction) => runner([contractRateLimitStage(runtime, action)]) };
}

export function contractRateLimitStage(runtime: Runtime, action: ContractRateLimitAction = {}): Stage {
  const auth = resolveAuthConfig({});
  const verifier = runtime.verifiers.obtain(auth);
  const dev = auth.developmentAuthEnabled;
  const failed = (err: unknown, req: Request, res: Response): void => failure(runtime, err, req, res);

  const run = (req: Request, res: Response): void | Promise<void> => {
    // The request's contract when the route names one; one that cannot be resolved is answered by a later step.
    if (!routeOf(req, action)) return count(req, res, undefined);
    let resolved: ResolvedContract | undefined;
    try {
      resolved = contractAtHand(req, action, runtime);
    } catch {
      return count(req, res, undefined);
    }
    return resolved ? count(req, res, resolved.contract) : countOnceRead(req, res);
  };
  const countOnceRead = async (req: Request, res: Response): Promise<void> => {
    let contract: Contract | undefined;
    try {
      contract = (await contractOnceRead(req, res, action, runtime)).contract;
    } catch {
      // answered by a later step
    }
    await count(req, res, contract);
  };

  /** Counts the request against the limit that applies to it, if any (waiting for the counter store). */
  const count = (req: Request, res: Response, contract: Contract | undefined): void | Promise<void> => {
    const limit = limitFor(contract, runtime.settings, action);
    if (limit) return countCaller(req, res, runtime.settings.rateLimitPrefix, limit);
  };
  const countCaller = async (req: Request, res: Response, prefix: string, limit: AppliedLimit): Promise<void> => {
    const caller = await callerKey(req, verifier, dev);
    await hostLimiter(runtime, req, res, { key: counterKey(prefix, limit, caller), limit });
  };

  return { run, failed };
}

/** The host's limiter counts the request (answering 429 past the limit); a store that fails lets it by, logged. */
function hostLimiter(runtime: Runtime, req: Request, res: Response, counted: Counted): Promise<void> {
  requestState(req).counted = counted;
  return new Promise((resolve) => {
    runtime.rateLimits.limiters(limiterHooks).limiter(counted.limit.max, counted.limit.windowMs)(req, res, (err?: unknown) => {
      if (err !== undefined && err !== null) warnStoreFailure(runtime, traceOf(req, res).correlationId, err);
      resolve();
    });
  });
}

function failure(runtime: Runtime, err: unknown, req: Request, res: Response): void {
  const { correlationId } = traceOf(req, res);
  runtime.log.error(`[${correlationId}] rate limit failed unexpectedly: ${errorMessage(err)}`);
  sendError(res, err, correlationId);
}

function warnStoreFailure(runtime: Runtime, correlationId: string, err: unknown): void {
  if (!runtime.rateLimits.storeWarningDue()) return;
  const reason = errorMessage(err);
  runtime.log.warn(`[${correlationId}] rate limit store unavailable (${reason}); requests pass unlimited until it is back`);
}
