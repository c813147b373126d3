import type { Request, Response } from 'express';
import { resolveContract, routeOf, type RouteAction } from '../pipeline/resolve-contract';

/** What the auth steps need to know about an action: the route fields of generated pipelines, plus our own. */
export interface AccessAction extends RouteAction {
  /** Hand-written pipelines: the route needs no authentication. */
  public?: boolean;
  /** Hand-written pipelines: permissions the caller must hold (generated routes take the contract's). */
  required?: string[];
}

export interface RouteAccess {
  public: boolean;
  required: string[];
  /** The contract could not be resolved (unknown message type, bad body, …): answered by the next step that needs it. */
  contractError?: unknown;
}

const KEY = Symbol('contracts.route-access');

/**
 * The access rule of this request, worked out once and shared by jwt-dev-auth and permission:
 * - a generated route (the action names a contract) takes `public` and `requiredPermissions` from the contract
 *   (resolveContract), plus any `required` the action adds;
 * - a hand-written route (no contract fields) takes `public` and `required` from the action; nothing means
 *   "authenticated, no particular permission".
 * A contract that cannot be resolved makes the route non-public, so an anonymous caller learns nothing about
 * which message types exist (401 first, 404 after authentication).
 */
export async function routeAccess(req: Request, res: Response, action: AccessAction): Promise<RouteAccess> {
  // Cached per request and per action: in a hand-written pipeline jwt-dev-auth and permission carry different
  // actions (only permission has `required`), so one step's answer must not stand in for the other's.
  const holder = req as unknown as Record<symbol, WeakMap<object, RouteAccess> | undefined>;
  const cache = (holder[KEY] ??= new WeakMap());
  const known = cache.get(action);
  if (known) return known;
  const extra = Array.isArray(action.required) ? action.required.filter((p) => typeof p === 'string') : [];
  let access: RouteAccess;
  if (routeOf(req, action)) {
    try {
      const { contract } = await resolveContract(req, res, action);
      access = { public: contract.public === true, required: unique([...(contract.requiredPermissions ?? []), ...extra]) };
    } catch (err) {
      access = { public: false, required: extra, contractError: err };
    }
  } else {
    access = { public: action.public === true, required: unique(extra) };
  }
  cache.set(action, access);
  return access;
}

function unique(items: string[]): string[] {
  return [...new Set(items)];
}
