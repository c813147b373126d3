import type { Request, Response } from 'express';
import { schema } from './schema';
import { requestUser } from '../../plugin/pipeline/user';
import { accessAtHand, accessOnceRead, type AccessAction, type RouteAccess } from '../../plugin/auth/route-access';
import { firstMissingPermission } from '../../plugin/auth/permissions';
import { insufficientPermissions, unauthorized } from '../../plugin/auth/auth-errors';
import { answerStepError } from '../../plugin/pipeline/step-error';
import type { Runtime } from '../../plugin/runtime';
import { runner, type Stage } from '../../plugin/lifecycle/runner';

/**
 * `permission`: the caller set by jwt-dev-auth must hold every permission the route requires (the contract's
 * requiredPermissions, or the action's `required` on a hand-written pipeline); the first one missing gives
 * 403 INSUFFICIENT_PERMISSIONS with `requiredPermission`. admin:all grants everything. No caller on a non-public
 * route → 401 UNAUTHORIZED (the step runs without jwt-dev-auth before it). Public routes are not checked.
 *
 * Development mode: no token is verified and X-Dev-Permissions lets any caller claim any permission. The check
 * here still runs, against the permissions the development user was given in X-Dev-Permissions: otherwise that
 * header would mean nothing, and a developer can try a route both with and without a permission. It is not a
 * security boundary in development mode.
 */
export function permissionPolicy(runtime: Runtime) {
  return { name: 'permission', schema, policy: (action?: AccessAction) => runner([permissionStage(runtime, action)]) };
}

export function permissionStage(runtime: Runtime, action: AccessAction = {}): Stage {
  const failed = answerStepError(runtime.log, () => 'permission check failed unexpectedly');
  const run = (req: Request, res: Response): void | Promise<void> => {
    const access = accessAtHand(req, action, runtime);
    return access ? check(req, access) : checkOnceRead(req, res);
  };
  const checkOnceRead = async (req: Request, res: Response): Promise<void> => check(req, await accessOnceRead(req, res, action, runtime));
  return { run, failed };
}

/** Throws the answer when the caller may not go on. */
function check(req: Request, access: RouteAccess): void {
  if (access.public) return;
  const user = requestUser(req);
  if (!user) throw unauthorized();
  // A contract that could not be resolved is answered now that the caller is known (404, 400, …).
  if (access.contractError !== undefined) throw access.contractError;
  const missing = firstMissingPermission(user, access.required);
  if (missing !== undefined) throw insufficientPermissions(missing);
}
