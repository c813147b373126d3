import type { Request, Response, NextFunction } from 'express';
import { schema } from './schema';
import { traceOf } from '../../plugin/request/trace';
import { requestState } from '../../plugin/request/state';
import { sendError } from '../../plugin/http/respond';
import { currentRuntime, type Runtime } from '../../plugin/runtime';
import { resolveContract, routeOf, type RouteAction } from '../../plugin/pipeline/resolve-contract';
import { resolveAuthConfig } from '../../plugin/auth/auth-config';
import { obtainVerifier } from '../../plugin/auth/verifiers';
import { authenticateRequest } from '../../plugin/auth/authenticate';
import type { Contract } from '../../plugin/contracts/types';
import { LimiterCache } from '../../plugin/edge/host-rate-limit';
import { callerKey, counterKey, limitFor, retryAfterSeconds, tooManyRequests, type AppliedLimit, type ExplicitLimit } from '../../plugin/edge/rate-limit';
import { errorMessage } from '../../plugin/errors';
import { andThen, attempt, settle, type Maybe } from '../../plugin/pipeline/maybe';
import type { TokenVerifier } from '../../plugin/auth/verify-token';

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
 * gateway-wide one, a key of the verified caller (or the client address), the spec's 429 body, and no delay.
 * It runs before jwt-dev-auth, so it asks the shared token verifier itself; the verified token is cached there and
 * jwt-dev-auth finds it again without a second verification.
 * A store that fails lets the request through (logged): a Redis outage must not become an API outage.
 */
function contractRateLimit(action: ContractRateLimitAction = {}) {
  const auth = resolveAuthConfig({});
  const verifier = obtainVerifier(auth);
  const dev = auth.developmentAuthEnabled;
  return (req: Request, res: Response, next: NextFunction): void => {
    const trace = traceOf(req, res);
    const runtime = currentRuntime();
    if (!runtime) return next();
    settle(
      () => counted(req, res, runtime, action, verifier, dev),
      (count) => {
        if (!count) return next();
        requestState(req).counted = count;
        limiters.limiter(count.limit.max, count.limit.windowMs)(req, res, (err?: unknown) => {
          if (err !== undefined && err !== null) warnStoreFailure(trace.correlationId, err);
          next();
        });
      },
      (err) => {
        currentRuntime()?.log.error(`[${trace.correlationId}] rate limit failed unexpectedly: ${errorMessage(err)}`);
        sendError(res, err, trace.correlationId);
      },
    );
  };
}

/** The counter and limit of this request, or undefined when no limit applies. */
function counted(req: Request, res: Response, runtime: Runtime, action: ContractRateLimitAction, verifier: TokenVerifier, dev: boolean): Maybe<Counted | undefined> {
  return andThen(contractOf(req, res, action), (contract) => {
    const limit = limitFor(contract, runtime.settings, action);
    if (!limit) return undefined;
    return andThen(callerKey(req, () => authenticateRequest(req, verifier, dev)), (caller) => ({ key: counterKey(runtime.settings.rateLimitPrefix, limit, caller), limit }));
  });
}

/** The request's contract when the route names one; one that cannot be resolved is answered by a later step. */
function contractOf(req: Request, res: Response, action: RouteAction): Maybe<Contract | undefined> {
  if (!routeOf(req, action)) return undefined;
  return attempt(() => resolveContract(req, res, action), (resolved) => resolved.contract, () => undefined);
}

function warnStoreFailure(correlationId: string, err: unknown): void {
  const now = Date.now();
  if (now - lastStoreWarning < STORE_WARNING_INTERVAL_MS) return;
  lastStoreWarning = now;
  const reason = errorMessage(err);
  currentRuntime()?.log.warn(`[${correlationId}] rate limit store unavailable (${reason}); requests pass unlimited until it is back`);
}

export const contractRateLimitPolicy = { name: 'contract-rate-limit', schema, policy: contractRateLimit };
