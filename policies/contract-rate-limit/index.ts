import type { Request, Response, NextFunction } from 'express';
import { schema } from './schema';
import { traceOf } from '../../plugin/request/trace';
import { requestState } from '../../plugin/request/state';
import { sendError } from '../../plugin/http/respond';
import { currentRuntime, startedRuntime, type Runtime } from '../../plugin/runtime';
import { resolveContract, routeOf, type ResolvedContract, type RouteAction } from '../../plugin/pipeline/resolve-contract';
import { resolveAuthConfig } from '../../plugin/auth/auth-config';
import { obtainVerifier } from '../../plugin/auth/verifiers';
import type { Contract } from '../../plugin/contracts/types';
import { LimiterCache } from '../../plugin/edge/host-rate-limit';
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
const limiters = new LimiterCache({
  keyGenerator: (req) => countedOf(req).key,
  handler: (req, res) => {
    const reset = (req as Request & { rateLimit?: { resetTime?: unknown } }).rateLimit?.resetTime;
    sendError(res, tooManyRequests(retryAfterSeconds(reset, countedOf(req).limit.windowMs)), traceOf(req, res).correlationId);
  },
});

/** A store failure is logged at most this often: during a Redis outage every request would log otherwise. */
const STORE_WARNING_INTERVAL_MS = 10000;
let lastStoreWarning = 0;

/**
 * `contract-rate-limit`: the host's rate-limit (express-rate-limit on the host's Redis store, see
 * plugin/edge/host-rate-limit.ts) with what YAML cannot give it: the limit of the request's contract or the
 * gateway-wide one, a key of the verified caller (or the client address), the 429 error body, and no delay.
 * It runs before jwt-dev-auth, so it asks the shared token verifier itself; the verified token is cached there and
 * jwt-dev-auth finds it again without a second verification.
 * A store that fails lets the request through (logged): a Redis outage must not become an API outage.
 */
function contractRateLimit(action: ContractRateLimitAction = {}) {
  const auth = resolveAuthConfig({});
  const verifier = obtainVerifier(auth);
  const dev = auth.developmentAuthEnabled;
  // Made once per policy; settle and andThen hand each request to them (no closure per request).
  const limited = (contract: Contract | undefined, req: Request, runtime: Runtime): Maybe<Counted | undefined> => {
    const limit = limitFor(contract, runtime.settings, action);
    if (!limit) return undefined;
    return andThen(callerKey(req, verifier, dev), countedAs, runtime.settings.rateLimitPrefix, limit);
  };
  const counted = (req: Request, res: Response): Maybe<Counted | undefined> => andThen(contractOf(req, res, action), limited, req, startedRuntime());
  return (req: Request, res: Response, next: NextFunction): void => {
    traceOf(req, res);
    if (!currentRuntime()) return next();
    settle(counted, count, failed, req, res, next);
  };
}

/** The counter and limit of this request, or undefined when no limit applies. */
function countedAs(caller: string, prefix: string, limit: AppliedLimit): Counted {
  return { key: counterKey(prefix, limit, caller), limit };
}

/** Counts the request against its limit (the host's rate-limit answers 429 past it), or lets it by when none applies. */
function count(counted: Counted | undefined, req: Request, res: Response, next: NextFunction): void {
  if (!counted) return next();
  requestState(req).counted = counted;
  limiters.limiter(counted.limit.max, counted.limit.windowMs)(req, res, (err?: unknown) => {
    if (err !== undefined && err !== null) warnStoreFailure(traceOf(req, res).correlationId, err);
    next();
  });
}

function failed(err: unknown, req: Request, res: Response): void {
  const { correlationId } = traceOf(req, res);
  currentRuntime()?.log.error(`[${correlationId}] rate limit failed unexpectedly: ${errorMessage(err)}`);
  sendError(res, err, correlationId);
}

/** The request's contract when the route names one; one that cannot be resolved is answered by a later step. */
function contractOf(req: Request, res: Response, action: RouteAction): Maybe<Contract | undefined> {
  if (!routeOf(req, action)) return undefined;
  return attempt(resolveContract, contractOfResolved, nothing, req, res, action);
}

function contractOfResolved(resolved: ResolvedContract): Contract {
  return resolved.contract;
}

function warnStoreFailure(correlationId: string, err: unknown): void {
  const now = Date.now();
  if (now - lastStoreWarning < STORE_WARNING_INTERVAL_MS) return;
  lastStoreWarning = now;
  const reason = errorMessage(err);
  currentRuntime()?.log.warn(`[${correlationId}] rate limit store unavailable (${reason}); requests pass unlimited until it is back`);
}

export const contractRateLimitPolicy = { name: 'contract-rate-limit', schema, policy: contractRateLimit };
