import type { Request, Response, NextFunction } from 'express';
import { schema } from './schema';
import { traceOf } from '../../plugin/request/trace';
import { requestState } from '../../plugin/request/state';
import { sendError } from '../../plugin/http/respond';
import type { Runtime } from '../../plugin/runtime';
import { resolveContract, routeOf, type ResolvedContract, type RouteAction } from '../../plugin/pipeline/resolve-contract';
import { resolveAuthConfig } from '../../plugin/auth/auth-config';
import type { Contract } from '../../plugin/contracts/types';
import type { LimiterOptions } from '../../plugin/edge/host-rate-limit';
import { callerKey, counterKey, limitFor, retryAfterSeconds, tooManyRequests, type AppliedLimit, type ExplicitLimit } from '../../plugin/edge/rate-limit';
import { errorMessage } from '../../plugin/errors';
import { andThen, attempt, nothing, settle, type Maybe } from '../../plugin/pipeline/maybe';

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
  handler: (req, res) => {
    const reset = (req as Request & { rateLimit?: { resetTime?: unknown } }).rateLimit?.resetTime;
    sendError(res, tooManyRequests(retryAfterSeconds(reset, countedOf(req).limit.windowMs)), traceOf(req, res).correlationId);
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
  return { name: 'contract-rate-limit', schema, policy: (action?: ContractRateLimitAction) => contractRateLimit(runtime, action) };
}

function contractRateLimit(runtime: Runtime, action: ContractRateLimitAction = {}) {
  const auth = resolveAuthConfig({});
  const verifier = runtime.verifiers.obtain(auth);
  const dev = auth.developmentAuthEnabled;
  // Made once per policy; settle and andThen hand each request to them (no closure per request).
  const limited = (contract: Contract | undefined, req: Request): Maybe<Counted | undefined> => {
    const limit = limitFor(contract, runtime.settings, action);
    if (!limit) return undefined;
    return andThen(callerKey(req, verifier, dev), countedAs, runtime.settings.rateLimitPrefix, limit);
  };
  const resolve = (req: Request, res: Response): Maybe<ResolvedContract> => resolveContract(req, res, action, runtime);
  const counted = (req: Request, res: Response): Maybe<Counted | undefined> => andThen(contractOf(req, res, action, resolve), limited, req);
  const count = (counted: Counted | undefined, req: Request, res: Response, next: NextFunction): void => countRequest(runtime, counted, req, res, next);
  const failed = (err: unknown, req: Request, res: Response): void => failure(runtime, err, req, res);
  return (req: Request, res: Response, next: NextFunction): void => {
    traceOf(req, res);
    settle(counted, count, failed, req, res, next);
  };
}

/** The counter and limit of this request, or undefined when no limit applies. */
function countedAs(caller: string, prefix: string, limit: AppliedLimit): Counted {
  return { key: counterKey(prefix, limit, caller), limit };
}

/** Counts the request against its limit (the host's rate-limit answers 429 past it), or lets it by when none applies. */
function countRequest(runtime: Runtime, counted: Counted | undefined, req: Request, res: Response, next: NextFunction): void {
  if (!counted) return next();
  requestState(req).counted = counted;
  runtime.rateLimits.limiters(limiterHooks).limiter(counted.limit.max, counted.limit.windowMs)(req, res, (err?: unknown) => {
    if (err !== undefined && err !== null) warnStoreFailure(runtime, traceOf(req, res).correlationId, err);
    next();
  });
}

function failure(runtime: Runtime, err: unknown, req: Request, res: Response): void {
  const { correlationId } = traceOf(req, res);
  runtime.log.error(`[${correlationId}] rate limit failed unexpectedly: ${errorMessage(err)}`);
  sendError(res, err, correlationId);
}

/** The request's contract when the route names one; one that cannot be resolved is answered by a later step. */
function contractOf(req: Request, res: Response, action: RouteAction, resolve: (req: Request, res: Response) => Maybe<ResolvedContract>): Maybe<Contract | undefined> {
  if (!routeOf(req, action)) return undefined;
  return attempt(resolve, contractOfResolved, nothing, req, res);
}

function contractOfResolved(resolved: ResolvedContract): Contract {
  return resolved.contract;
}

function warnStoreFailure(runtime: Runtime, correlationId: string, err: unknown): void {
  if (!runtime.rateLimits.storeWarningDue()) return;
  const reason = errorMessage(err);
  runtime.log.warn(`[${correlationId}] rate limit store unavailable (${reason}); requests pass unlimited until it is back`);
}
