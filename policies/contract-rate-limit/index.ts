import type { Request, Response } from 'express';
import { schema } from './schema';
import { POLICY_NAMES } from '../../plugin/policy-names';
import { traceOf } from '../../plugin/request/trace';
import { sendError } from '../../plugin/http/respond';
import type { RequestServices } from '../../plugin/parts/request-services';
import { contractOf, routeOf, type RouteAction, type ContractSource } from '../../plugin/pipeline/resolve-contract';
import type { RequestContext } from '../../plugin/request/context';
import type { Contract } from '../../plugin/contracts/types';
import {
  addressKey,
  callerKey,
  counterKey,
  limitFor,
  publicLimitFor,
  retryAfterSeconds,
  tooManyRequests,
  type AppliedLimit,
  type ExplicitLimit,
} from '../../plugin/edge/rate-limit';
import { errorMessage } from '../../plugin/errors/describe';
import { serviceUnavailable } from '../../plugin/errors/gateway-error';
import { runner, type Step } from '../../plugin/lifecycle/runner';

export type ContractRateLimitAction = RouteAction & ExplicitLimit;

/** How long a client is asked to wait when the store is away and requests are refused (fail closed). */
const STORE_RETRY_AFTER_SECONDS = 5;

/** What the step uses: the contracts (a contract's limit), the log, the settings, the token verifiers, the rate limiters. */
type Uses = ContractSource & Pick<RequestServices, 'log' | 'settings' | 'verifiers' | 'rateLimits'>;

/**
 * `contract-rate-limit`: the host's rate-limit (express-rate-limit on the host's Redis store, see
 * plugin/host/rate-limiters.ts) with what YAML cannot give it: the limit of the request's contract or the
 * gateway-wide one, a key of the verified caller (or the client address), the 429 error body, and no delay.
 * It runs before jwt-dev-auth, so it asks the shared token verifier itself; the verified token is cached there and
 * jwt-dev-auth finds it again without a second verification.
 * A request never waits for the store longer than `rateLimitStoreTimeoutMs`. A store that fails or is too slow lets
 * the request through uncounted (`rateLimitOnStoreFailure: open`, the default: a Redis outage must not become an API
 * outage) or refuses it 503 (`closed`), the same for every rate-limited request until the store answers again.
 * The limiters and the store's health are the request services' (services.rateLimits), so they outlive a config reload.
 */
export function contractRateLimitPolicy(services: Uses) {
  return {
    name: POLICY_NAMES.contractRateLimit,
    schema,
    policy: (action?: ContractRateLimitAction) => runner([contractRateLimitStep(services, action)]),
  };
}

function contractRateLimitStep(services: Uses, action: ContractRateLimitAction = {}): Step {
  const auth = services.settings.auth;
  const verifier = services.verifiers.obtain(auth);
  const dev = auth.developmentAuthEnabled;
  const failed = (err: unknown, req: Request, res: Response): void => failure(services, err, req, res);

  const run = (req: Request, res: Response, ctx: RequestContext): void | Promise<void> =>
    count(req, res, contractIfAny(ctx, req));
  /** The request's contract when the route names one; one that cannot be resolved is answered by a later step. */
  const contractIfAny = (ctx: RequestContext, req: Request): Contract | undefined => {
    if (!routeOf(ctx, req, action)) return undefined;
    try {
      return contractOf(ctx, req, action, services).contract;
    } catch {
      return undefined;
    }
  };

  /**
   * Counts the request against the limits that apply to it, if any (waiting for the counter store): a public
   * contract's per-address limit first, then the caller's, unless the first has answered.
   */
  const count = (req: Request, res: Response, contract: Contract | undefined): void | Promise<void> => {
    const limit = limitFor(contract, services.settings, action);
    const perAddress = publicLimitFor(contract, services.settings);
    if (perAddress) return countAddressThenCaller(req, res, perAddress, limit);
    if (limit) return countCaller(req, res, services.settings.rateLimitPrefix, limit);
  };
  const countAddressThenCaller = async (
    req: Request,
    res: Response,
    perAddress: AppliedLimit,
    limit: AppliedLimit | undefined,
  ): Promise<void> => {
    const { rateLimitPrefix } = services.settings;
    await hostLimiter(services, req, res, counterKey(rateLimitPrefix, perAddress, addressKey(req)), perAddress);
    if (limit && !res.headersSent) await countCaller(req, res, rateLimitPrefix, limit);
  };
  const countCaller = async (req: Request, res: Response, prefix: string, limit: AppliedLimit): Promise<void> => {
    const caller = await callerKey(req, verifier, dev);
    await hostLimiter(services, req, res, counterKey(prefix, limit, caller), limit);
  };

  return { needs: { body: 'contract', route: action, limits: services.settings }, run, failed };
}

/** The host's limiter counts the request: its headers on the answer, 429 past the limit; a store away, open or 503. */
async function hostLimiter(
  services: Uses,
  req: Request,
  res: Response,
  key: string,
  limit: AppliedLimit,
): Promise<void> {
  const outcome = await services.rateLimits.count(key, limit.max, limit.windowMs);
  if (outcome.kind === 'unavailable') {
    if (services.settings.rateLimitOnStoreFailure === 'closed') {
      sendError(
        res,
        serviceUnavailable('The rate limit store is unavailable', STORE_RETRY_AFTER_SECONDS),
        traceOf(req, res).correlationId,
      );
    }
    return;
  }
  if (res.headersSent) return;
  for (const [name, value] of outcome.headers) res.setHeader(name, value as string | number);
  // Answered here, the runner goes no further.
  if (outcome.over)
    sendError(
      res,
      tooManyRequests(retryAfterSeconds(outcome.resetTime, limit.windowMs)),
      traceOf(req, res).correlationId,
    );
}

function failure(services: Uses, err: unknown, req: Request, res: Response): void {
  const { correlationId } = traceOf(req, res);
  services.log.error(`[${correlationId}] rate limit failed unexpectedly: ${errorMessage(err)}`);
  sendError(res, err, correlationId);
}
