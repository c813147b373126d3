import type { Request } from 'express';
import { contractOf, routeOf, type ContractSource, type RouteAction } from '../pipeline/resolve-contract';
import type { Contract } from '../contracts/types';
import type { RequestContext } from '../request/context';

/** What the auth steps need to know about an action: the route fields of generated pipelines, plus our own. */
export interface AccessAction extends RouteAction {
  /** Hand-written pipelines: the route needs no authentication. */
  public?: boolean;
  /** Hand-written pipelines: permissions the caller must hold (generated routes take the contract's). */
  required?: string[];
}

/** A route's access rule; the one the caller was let on under becomes the run's AccessDecision (request/context.ts). */
export interface RouteAccess {
  readonly public: boolean;
  readonly required: readonly string[];
  /** The contract could not be resolved (unknown message type, bad body, …): answered by the next step that needs it. */
  contractError?: unknown;
}

/** Access of a hand-written route that serves no contract, by its step's action (which lives as long as its pipeline). */
const byAction = new WeakMap<object, RouteAccess>();
/** Access of a contract route, by contract then step action: the registry's contract objects are replaced, never changed. */
const byContract = new WeakMap<object, WeakMap<object, RouteAccess>>();

/**
 * The access rule of this request, shared by jwt-dev-auth and permission:
 * - a generated route (the action names a contract) takes `public` and `requiredPermissions` from the contract
 *   (contractOf), plus any `required` the action adds;
 * - a hand-written route (no contract fields) takes `public` and `required` from the action; nothing means
 *   "authenticated, no particular permission".
 * A contract that cannot be resolved (unknown message type, a body that could not be read, …) makes the route
 * non-public, so an anonymous caller learns nothing about which message types exist (401 first, 404 after
 * authentication). On a route that dispatches on the body, the runner reads it before the step (the step's `needs`).
 * Rules depend only on the contract and the step's action, so they are worked out once for each pair, not per
 * request (a hand-written pipeline gives jwt-dev-auth and permission different actions: each gets its own).
 */
export function accessOf(ctx: RequestContext, req: Request, action: AccessAction, source: ContractSource): RouteAccess {
  if (!routeOf(ctx, req, action)) {
    let access = byAction.get(action);
    if (!access)
      byAction.set(
        action,
        (access = Object.freeze({ public: action.public === true, required: unique(extraRequired(action)) })),
      );
    return access;
  }
  let contract: Contract;
  try {
    contract = contractOf(ctx, req, action, source).contract;
  } catch (err) {
    return unresolved(err, action);
  }
  return contractAccess(contract, action);
}

function unresolved(err: unknown, action: AccessAction): RouteAccess {
  return { public: false, required: extraRequired(action), contractError: err };
}

/** The access rule of a contract route: the contract's, plus any `required` the step's action adds. */
export function contractAccess(contract: Contract, action: AccessAction): RouteAccess {
  let perAction = byContract.get(contract);
  if (!perAction) byContract.set(contract, (perAction = new WeakMap()));
  let access = perAction.get(action);
  if (!access) {
    access = Object.freeze({
      public: contract.public === true,
      required: unique([...(contract.requiredPermissions ?? []), ...extraRequired(action)]),
    });
    perAction.set(action, access);
  }
  return access;
}

function extraRequired(action: AccessAction): string[] {
  return Array.isArray(action.required) ? action.required.filter((p) => typeof p === 'string') : [];
}

function unique(items: string[]): string[] {
  return [...new Set(items)];
}
