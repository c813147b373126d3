import type { Request, Response, NextFunction } from 'express';
import { schema } from './schema';
import { traceOf } from '../../plugin/request/trace';
import { setRequestUser } from '../../plugin/pipeline/user';
import { resolveAuthConfig, type AuthOverrides } from '../../plugin/auth/auth-config';
import { authenticateRequest } from '../../plugin/auth/authenticate';
import { routeAccess, type AccessAction, type RouteAccess } from '../../plugin/auth/route-access';
import type { AuthenticatedUser } from '../../plugin/auth/claims';
import type { TokenVerifier } from '../../plugin/auth/verify-token';
import { andThen, attempt, nothing, same, settle, type Maybe } from '../../plugin/pipeline/maybe';
import { answerStepError } from '../../plugin/pipeline/step-error';
import type { Runtime } from '../../plugin/runtime';

export type JwtDevAuthAction = AccessAction & AuthOverrides;

const OVERRIDE_KEYS = [
  'jwtSecret', 'jwksUri', 'issuer', 'audience', 'clockTolerance', 'developmentAuthEnabled', 'jwksCooldownMs',
  'jwksFailureBackoffMs', 'jwksTimeoutMs', 'jwksMaxAgeMs', 'tokenCacheMax', 'tokenCacheMaxTtlMs', 'maxTokenBytes',
] as const;

/**
 * `jwt-dev-auth`: establishes who the caller is and sets it with setRequestUser.
 * - Non-public routes: the Bearer token must verify (401 NO_AUTH_HEADER / INVALID_TOKEN / TOKEN_EXPIRED, 503 when
 *   the key set cannot be loaded); in development mode X-Dev-User-Id stands in for the token.
 * - Public routes (contract `public: true`, or `public: true` on a hand-written action): the request always
 *   passes. Credentials are optional there: a token (or dev headers) that checks out sets the user, so a public
 *   handler can still tell who called; a missing, bad or expired one is ignored rather than answered with 401
 *   (a client with a stale token must still reach login), and such a request reaches the service anonymous.
 * Configuration (environment, then action overrides) and development mode are read when the policy is created.
 */
export function jwtDevAuthPolicy(runtime: Runtime) {
  const failed = answerStepError(runtime.log, () => 'authentication failed unexpectedly');
  return { name: 'jwt-dev-auth', schema, policy: (action?: JwtDevAuthAction) => jwtDevAuth(runtime, failed, action) };
}

function jwtDevAuth(runtime: Runtime, failed: ReturnType<typeof answerStepError>, action: JwtDevAuthAction = {}) {
  const config = resolveAuthConfig(overridesOf(action));
  const verifier = runtime.verifiers.obtain(config);
  const dev = config.developmentAuthEnabled;
  // Made once per policy; settle and andThen hand each request to them (no closure per request).
  const callerFor = (access: RouteAccess, req: Request): Maybe<AuthenticatedUser | undefined> =>
    access.public ? optionalUser(req, verifier, dev) : authenticateRequest(req, verifier, dev);
  const caller = (req: Request, res: Response): Maybe<AuthenticatedUser | undefined> => andThen(routeAccess(req, res, action, runtime), callerFor, req);
  return (req: Request, res: Response, next: NextFunction): void => {
    traceOf(req, res);
    settle(caller, authenticated, failed, req, res, next);
  };
}

function authenticated(user: AuthenticatedUser | undefined, req: Request, _res: Response, next: NextFunction): void {
  if (user) setRequestUser(req, user);
  next();
}

/** The caller when the credentials check out (as authenticateRequest decides), else anonymous. */
function optionalUser(req: Request, verifier: TokenVerifier, dev: boolean): Maybe<AuthenticatedUser | undefined> {
  return attempt(authenticateRequest, same, nothing, req, verifier, dev);
}

function overridesOf(action: JwtDevAuthAction): AuthOverrides {
  const out: Record<string, unknown> = {};
  for (const k of OVERRIDE_KEYS) if (action[k] !== undefined) out[k] = action[k];
  return out as AuthOverrides;
}
