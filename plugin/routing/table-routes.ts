import type { Request } from 'express';
import { buildRouteTable } from '../contracts/route-table';
import type { Contract } from '../contracts/types';
import { routeAction, type RouteAction } from './route-action';
import type { Runtime } from '../runtime';
import { endpointTable, type PathTable } from './path-table';
import { requestState } from '../request/state';

/** What the route-table step found for a request: the route (as an endpoint's `contract:` would say) and its path parameters. */
export interface TableMatch {
  action: RouteAction;
  params: Record<string, string>;
}

declare module '../request/state' {
  interface RequestState {
    tableMatch?: TableMatch;
  }
}

export function tableMatchOf(req: Request): TableMatch | undefined {
  return requestState(req).tableMatch;
}

export function setTableMatch(req: Request, match: TableMatch): void {
  requestState(req).tableMatch = match;
}

interface Cached {
  table?: PathTable<RouteAction>;
}

const cached = new WeakMap<Runtime, Cached>();

/**
 * The path table of the contracts known now, built from the registry (not from gateway.config.yml, which the
 * host reloads later): a contract announced is routed from its next request on. Rebuilt lazily after a change.
 * Paths the table cannot hold are left out; with any of them the config writer goes back to one apiEndpoint per
 * route (config-sync), and this step is then not in the pipeline.
 */
export function currentPathTable(runtime: Runtime): PathTable<RouteAction> {
  let entry = cached.get(runtime);
  if (!entry) {
    const created: Cached = {};
    cached.set(runtime, created);
    runtime.registry.on('change', () => (created.table = undefined));
    entry = created;
  }
  entry.table ??= pathTableOf(runtime.registry.contracts(), runtime.settings.generatedPrefix);
  return entry.table;
}

/** The path template of each route the table holds, for metrics and span names (never the request's own path). */
const templates = new WeakMap<RouteAction, string>();

export function pathTableOf(contracts: Contract[], prefix: string): PathTable<RouteAction> {
  const { endpoints } = buildRouteTable(contracts, { prefix });
  return endpointTable(endpoints, (endpoint) => {
    const action = routeAction(endpoint);
    templates.set(action, endpoint.path);
    return action;
  });
}

/** The path template of the route the route-table step found for this request, if it found one. */
export function tableRouteOf(req: Request): string | undefined {
  const match = requestState(req).tableMatch;
  return match && templates.get(match.action);
}
