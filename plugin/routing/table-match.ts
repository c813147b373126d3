/**
 * The path table of the route plan (`routing: table`), and what it matched for a request: the route-table step keeps
 * the match, the later steps read it.
 */
import type { Request } from 'express';
import type { EndpointSpec } from '../contracts/endpoint-specs';
import { routeAction, type RouteAction } from './route-action';
import { endpointTable, type PathTable } from './path-table';
import { requestContext, runContext, type TableMatch } from '../request/context';

/** Kept for the steps after the route-table step: the route of this pipeline run is the one the table matched. */
export function setTableMatch(req: Request, match: TableMatch): void {
  const ctx = runContext(req);
  ctx.tableMatch = match;
  ctx.run.route = match.action;
}

/**
 * The path template of each route the table holds, for metrics and span names (never the request's own path).
 * Module-level: keyed by the frozen-in-use actions a table built, so it goes with the table that holds them.
 */
const templates = new WeakMap<RouteAction, string>();

/**
 * The path table of the route plan's endpoints (from the registry, not from gateway.config.yml, which the host
 * reloads later). Paths the table cannot hold are left out; with any of them the config writer goes back to one
 * apiEndpoint per route (config-sync), and the route-table step is then not in the pipeline.
 */
export function pathTableOf(endpoints: readonly EndpointSpec[]): PathTable<RouteAction> {
  return endpointTable(endpoints, (endpoint) => {
    const action = routeAction(endpoint);
    templates.set(action, endpoint.path);
    return action;
  });
}

/** The path template of the route the route-table step found for this request, if it found one. */
export function tableRouteOf(req: Request): string | undefined {
  const match = requestContext(req).tableMatch;
  return match && templates.get(match.action);
}
