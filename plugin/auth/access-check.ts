import type { Request } from 'express';
import { requestUser } from '../pipeline/user';
import { requestState } from '../request/state';
import { firstMissingPermission } from './permissions';
import { insufficientPermissions, unauthorized } from './auth-errors';
import { contractAccess, type RouteAccess } from './route-access';
import type { Contract } from '../contracts/types';
import { egContextOf } from '../host/eg-context';

declare module '../request/state' {
  interface RequestState {
    /** The pipeline run (the host's egContext) in which a permission step let the request on. */
    accessChecked?: object;
  }
}

/** Stands for "no pipeline run" when a step runs outside the host (tests, the benchmark). */
const OUTSIDE_HOST = {};

/**
 * The host gives every pipeline run its own egContext; a request that one pipeline passes on reaches the next
 * endpoint with a new one, so a check made in one pipeline never counts in another.
 */
function pipelineRun(req: Request): object {
  return egContextOf(req) ?? OUTSIDE_HOST;
}

/** Throws the answer unless the request's caller may use a route with this access rule (401, then 403). */
export function checkAccess(req: Request, access: RouteAccess): void {
  if (!access.public) {
    const user = requestUser(req);
    if (!user) throw unauthorized();
    // A contract that could not be resolved is answered now that the caller is known (404, 400, …).
    if (access.contractError !== undefined) throw access.contractError;
    const missing = firstMissingPermission(user, access.required);
    if (missing !== undefined) throw insufficientPermissions(missing);
  }
  requestState(req).accessChecked = pipelineRun(req);
}

/**
 * contract-router's own check, for pipelines where no permission step let the request on before it (a hand-written
 * pipeline of jwt-dev-auth and contract-router): the contract's requiredPermissions and `public` apply wherever the
 * contract is served.
 */
export function checkContractAccess(req: Request, contract: Contract): void {
  if (requestState(req).accessChecked === pipelineRun(req)) return;
  checkAccess(req, contractAccess(contract, NO_EXTRA));
}

const NO_EXTRA = Object.freeze({});
