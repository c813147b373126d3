import { schema } from './schema';
import { POLICY_NAMES } from '../../plugin/policy-names';
import { accessOf, type AccessAction } from '../../plugin/auth/route-access';
import { checkAccess } from '../../plugin/auth/access-check';
import { answerStepError } from '../../plugin/pipeline/step-error';
import type { RequestServices } from '../../plugin/parts/request-services';
import type { ContractSource } from '../../plugin/pipeline/resolve-contract';
import { runner, type Step } from '../../plugin/lifecycle/runner';

/**
 * `permission`: the caller set by jwt-dev-auth must hold every permission the route requires (the contract's
 * requiredPermissions, or the action's `required` on a hand-written pipeline); the first one missing gives
 * 403 INSUFFICIENT_PERMISSIONS with `requiredPermission`. admin:all grants everything. No caller on a non-public
 * route → 401 UNAUTHORIZED (the step runs without jwt-dev-auth before it). Public routes are not checked.
 * The decision it makes is kept in the request's context for this pipeline run, and contract-router reads it rather
 * than checking again: this step's rule replaces the contract's there (a hand-written step with `required` and no contract checks what it lists).
 *
 * Development mode: no token is verified and X-Dev-Permissions lets any caller claim any permission. The check
 * here still runs, against the permissions the development user was given in X-Dev-Permissions: otherwise that
 * header would mean nothing, and a developer can try a route both with and without a permission. It is not a
 * security boundary in development mode.
 */
/** What the step uses: the contracts (a route's rule is its contract's), the log, the body limits. */
type Uses = ContractSource & Pick<RequestServices, 'log' | 'settings'>;

export function permissionPolicy(services: Uses) {
  return {
    name: POLICY_NAMES.permission,
    schema,
    policy: (action?: AccessAction) => runner([permissionStep(services, action)]),
  };
}

function permissionStep(services: Uses, action: AccessAction = {}): Step {
  const failed = answerStepError(services.log, () => 'permission check failed unexpectedly');
  return {
    needs: { body: 'contract', route: action, limits: services.settings },
    run: (req, _res, ctx) => checkAccess(ctx, accessOf(ctx, req, action, services)),
    failed,
  };
}
