import type { Request } from 'express';
import { schema } from './schema';
import { POLICY_NAMES } from '../../plugin/policy-names';
import { AUTH_OVERRIDE_KEYS, withAuthOverrides, type AuthOverrides } from '../../plugin/settings/auth';
import { authenticateRequest, knownCaller } from '../../plugin/auth/authenticate';
import { accessOf, type AccessAction } from '../../plugin/auth/route-access';
import { answerStepError } from '../../plugin/pipeline/step-error';
import { runner, type Step } from '../../plugin/lifecycle/runner';
import type { RequestServices } from '../../plugin/parts/request-services';
import type { ContractSource } from '../../plugin/pipeline/resolve-contract';
import type { RequestContext } from '../../plugin/request/context';

export type JwtDevAuthAction = AccessAction & AuthOverrides;

/** What the step uses: the contracts (a route's rule is its contract's), the log, the auth settings, the token verifiers. */
type Uses = ContractSource & Pick<RequestServices, 'log' | 'settings' | 'verifiers'>;

/**
 * `jwt-dev-auth`: establishes who the caller is and keeps it in the request's context (`caller`).
 * - Non-public routes: the Bearer token must verify (401 NO_AUTH_HEADER / INVALID_TOKEN / TOKEN_EXPIRED, 503 when
 *   the key set cannot be loaded); in development mode X-Dev-User-Id stands in for the token.
 * - Public routes (contract `public: true`, or `public: true` on a hand-written action): the request always
 *   passes. Credentials are optional there: a token (or dev headers) that checks out sets the user, so a public
 *   handler can still tell who called; a missing, bad or expired one is ignored rather than answered with 401
 *   (a client with a stale token must still reach login), and such a request reaches the service anonymous.
 * Configuration and development mode: the gateway's authentication settings (services.settings.auth), with the
 * action's overrides merged onto them when the policy is created.
 */
export function jwtDevAuthPolicy(services: Uses) {
  return {
    name: POLICY_NAMES.jwtDevAuth,
    schema,
    policy: (action?: JwtDevAuthAction) => runner([jwtDevAuthStep(services, action)]),
  };
}

function jwtDevAuthStep(services: Uses, action: JwtDevAuthAction = {}): Step {
  const failed = answerStepError(services.log, () => 'authentication failed unexpectedly');
  const config = withAuthOverrides(services.settings.auth, overridesOf(action));
  const verifier = services.verifiers.obtain(config);
  const dev = config.developmentAuthEnabled;

  const run = (req: Request, _res: unknown, ctx: RequestContext): void | Promise<void> =>
    accessOf(ctx, req, action, services).public ? identifyIfAble(req, ctx) : authenticate(req, ctx);

  /** The caller, kept in the request's context, or the 401 thrown; waits only for a token not verified before. */
  const authenticate = (req: Request, ctx: RequestContext): void | Promise<void> => {
    const user = knownCaller(req, verifier, dev);
    if (!user) return verifyThenSet(req, ctx);
    ctx.caller = user;
  };
  const verifyThenSet = async (req: Request, ctx: RequestContext): Promise<void> => {
    ctx.caller = await authenticateRequest(req, verifier, dev);
  };

  /** Public routes: the caller when the credentials check out (as authenticate decides), else anonymous. */
  const identifyIfAble = (req: Request, ctx: RequestContext): void | Promise<void> => {
    try {
      const user = knownCaller(req, verifier, dev);
      if (!user) return verifyIfAble(req, ctx);
      ctx.caller = user;
    } catch {
      // anonymous
    }
  };
  const verifyIfAble = async (req: Request, ctx: RequestContext): Promise<void> => {
    try {
      ctx.caller = await authenticateRequest(req, verifier, dev);
    } catch {
      // anonymous
    }
  };

  return { needs: { body: 'contract', route: action, limits: services.settings }, run, failed };
}

function overridesOf(action: JwtDevAuthAction): AuthOverrides {
  const out: Record<string, unknown> = {};
  for (const k of AUTH_OVERRIDE_KEYS) if (action[k] !== undefined) out[k] = action[k];
  return out as AuthOverrides;
}
