import type { Request, Response, NextFunction } from 'express';
import { schema } from './schema';
import { traceOf } from '../../plugin/request/trace';
import { requestUser } from '../../plugin/pipeline/user';
import { routeAccess, type AccessAction } from '../../plugin/auth/route-access';
import { firstMissingPermission } from '../../plugin/auth/permissions';
import { insufficientPermissions, unauthorized } from '../../plugin/auth/auth-errors';
import { settle, type Maybe } from '../../plugin/pipeline/maybe';
import { answerStepError } from '../../plugin/pipeline/step-error';
import type { RouteAccess } from '../../plugin/auth/route-access';
import type { Runtime } from '../../plugin/runtime';

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
  const failed = answerStepError(runtime.log, () => 'permission check failed unexpectedly');
  return { name: 'permission', schema, policy: (action?: AccessAction) => permission(runtime, failed, action) };
}

function permission(runtime: Runtime, failed: ReturnType<typeof answerStepError>, action: AccessAction = {}) {
  // Made once per policy; settle hands each request to it (no closure per request).
  const access = (req: Request, res: Response): Maybe<RouteAccess> => routeAccess(req, res, action, runtime);
  return (req: Request, res: Response, next: NextFunction): void => {
    traceOf(req, res);
    settle(access, allowed, failed, req, res, next);
  };
}

function allowed(access: RouteAccess, req: Request, _res: Response, next: NextFunction): void {
  check(req, access);
  next();
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
