import type { RequestContext } from '../request/context';
import { firstMissingPermission } from './permissions';
import { insufficientPermissions, unauthorized } from './auth-errors';
import { contractAccess, type RouteAccess } from './route-access';
import type { Contract } from '../contracts/types';

/**
 * The access decision of the pipeline run: throws the answer unless the request's caller may use a route with this
 * access rule (401, then 403); when it may, the decision is kept in the run (ctx.run.access) for the steps after.
 */
export function checkAccess(ctx: RequestContext, access: RouteAccess): void {
  if (!access.public) {
    const user = ctx.caller;
    if (!user) throw unauthorized();
    // A contract that could not be resolved is answered now that the caller is known (404, 400, …).
    if (access.contractError !== undefined) throw access.contractError;
    const missing = firstMissingPermission(user, access.required);
    if (missing !== undefined) throw insufficientPermissions(missing);
  }
  ctx.run.access = access;
}

/**
 * contract-router's own check (fail closed), for pipelines where no step of this run decided on access before it (a
 * hand-written pipeline of jwt-dev-auth and contract-router): the contract's requiredPermissions and `public` apply
 * wherever the contract is served. A decision made before in this run (a permission step's) stands: its rule replaces
 * the contract's there.
 */
export function checkContractAccess(ctx: RequestContext, contract: Contract): void {
  if (ctx.run.access !== undefined) return;
  checkAccess(ctx, contractAccess(contract, NO_EXTRA));
}

const NO_EXTRA = Object.freeze({});
