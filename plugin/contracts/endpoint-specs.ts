import { deriveRoutes } from './derive-routes';
import type { Contract, ContractKind, DerivedRoute, HttpMethod } from './types';

const DEFAULT_ENDPOINT_PREFIX = 'contracts-';

/** A contract reachable on an endpoint only when the request carries the `whenQuery` query-string parameter. */
interface RouteVariant {
  whenQuery: string;
  messageType: string;
  kind: ContractKind;
}

/** One generated apiEndpoint: a single method and path (every one runs the shared generated pipeline). */
export interface EndpointSpec {
  /** apiEndpoints/pipelines key: prefix + method + path, lower-case, unique within the table. */
  name: string;
  method: HttpMethod;
  path: string;
  /** The contract served when no variant's query parameter is present; absent on dispatch endpoints and on paths reached only through a variant. */
  messageType?: string;
  kind?: ContractKind;
  /** Sorted by whenQuery. Checked before falling back to `messageType`. */
  variants: RouteVariant[];
  /** Set on the generic routes: the caller names the message type in the body or the query string. */
  dispatch?: 'body' | 'query';
  /** Every message type reachable through this endpoint (default, variants, or the dispatch allow-list), sorted. */
  messageTypes: string[];
}

/**
 * Two or more contracts derived the same route. `duplicate`: the same method+path+whenQuery; the first
 * of `messageTypes` (sort order) keeps it. `reserved`: a contract route landed on a generic dispatch route,
 * which keeps the path; every message type listed lost it.
 */
export interface Conflict {
  method: HttpMethod;
  path: string;
  whenQuery?: string;
  reason: 'duplicate' | 'reserved';
  /** `duplicate`: [winner, loser…]; `reserved`: the losers. */
  messageTypes: string[];
  /** Parallel to `messageTypes`. */
  targetServices: string[];
}

/** The generated endpoints of some contracts, in an order Express can match, and the conflicts between them. */
export interface EndpointSpecs {
  endpoints: EndpointSpec[];
  conflicts: Conflict[];
}

export interface EndpointSpecOptions {
  prefix?: string;
  /** Message types left out altogether (the setting excludeFromGeneratedRoutes): no route, no generic dispatch. */
  excluded?: readonly string[];
}

interface OwnedRoute {
  route: DerivedRoute;
  contract: Contract;
}

/** Code-unit comparison: deterministic regardless of the process locale. */
function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function compareContracts(a: Contract, b: Contract): number {
  return compareText(a.messageType, b.messageType) || compareText(a.targetService, b.targetService);
}

/** 0 static, 1 named parameter, 2 wildcard or pattern: the more a segment can match, the later it goes. */
function segmentRank(segment: string): number {
  if (segment.includes('*') || segment.includes('(')) return 2;
  return segment.startsWith(':') ? 1 : 0;
}

/**
 * Express matches routes in registration order, so at each depth a static segment must come before a
 * parameter (GET /api/users/me before GET /api/users/:userId), and a parameter before a wildcard.
 * Otherwise plain sort order.
 */
export function comparePaths(a: string, b: string): number {
  const left = a.split('/');
  const right = b.split('/');
  for (let i = 0; i < Math.min(left.length, right.length); i += 1) {
    const l = left[i] as string;
    const r = right[i] as string;
    if (l === r) continue;
    return segmentRank(l) - segmentRank(r) || compareText(l, r);
  }
  return left.length - right.length;
}

/** A YAML-safe key: prefix + method + path with every run of other characters as one dash. */
export function endpointName(prefix: string, method: HttpMethod, path: string): string {
  const slug = `${method}-${path}`
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
  return `${prefix}${slug}`;
}

function routeKey(method: HttpMethod, path: string): string {
  return `${method} ${path}`;
}

function conflictFor(reason: Conflict['reason'], route: DerivedRoute, owners: OwnedRoute[]): Conflict {
  const conflict: Conflict = {
    method: route.method,
    path: route.path,
    reason,
    messageTypes: owners.map((o) => o.contract.messageType),
    targetServices: owners.map((o) => o.contract.targetService),
  };
  if (route.whenQuery !== undefined) conflict.whenQuery = route.whenQuery;
  return conflict;
}

/** Builds one endpoint for a (method, path) from its routes; collects the conflicts it finds. */
function buildEndpoint(owned: OwnedRoute[], conflicts: Conflict[]): Omit<EndpointSpec, 'name'> {
  const first = (owned[0] as OwnedRoute).route;
  const dispatchers = owned.filter((o) => o.route.dispatch !== undefined);
  if (dispatchers.length > 0) {
    // A generic route is reserved for dispatch; contract routes that land on it lose.
    const losers = owned.filter((o) => o.route.dispatch === undefined);
    if (losers.length > 0) conflicts.push(conflictFor('reserved', losers[0]!.route, losers));
    const messageTypes = [...new Set(dispatchers.map((o) => o.contract.messageType))].sort(compareText);
    return {
      method: first.method,
      path: first.path,
      variants: [],
      dispatch: dispatchers[0]!.route.dispatch,
      messageTypes,
    };
  }
  // Group by whenQuery ('' = the default); owners arrive sorted so the first is the winner.
  const byQuery = new Map<string, OwnedRoute[]>();
  for (const o of owned) {
    const key = o.route.whenQuery ?? '';
    const list = byQuery.get(key) ?? [];
    list.push(o);
    byQuery.set(key, list);
  }
  const endpoint: Omit<EndpointSpec, 'name'> = {
    method: first.method,
    path: first.path,
    variants: [],
    messageTypes: [],
  };
  for (const key of [...byQuery.keys()].sort(compareText)) {
    const owners = byQuery.get(key) as OwnedRoute[];
    const winner = owners[0] as OwnedRoute;
    if (owners.length > 1) conflicts.push(conflictFor('duplicate', winner.route, owners));
    if (key === '') {
      endpoint.messageType = winner.contract.messageType;
      endpoint.kind = winner.route.kind;
    } else {
      endpoint.variants.push({ whenQuery: key, messageType: winner.contract.messageType, kind: winner.route.kind });
    }
  }
  const reachable = [endpoint.messageType, ...endpoint.variants.map((v) => v.messageType)];
  endpoint.messageTypes = [...new Set(reachable.filter((t): t is string => t !== undefined))].sort(compareText);
  return endpoint;
}

/** Names must be unique keys; two paths that slug alike (`/a/:b` and `/a/b`) get `-2`, `-3`… in table order. */
function assignNames(endpoints: Array<Omit<EndpointSpec, 'name'>>, prefix: string): EndpointSpec[] {
  const used = new Set<string>();
  return endpoints.map((endpoint) => {
    const base = endpointName(prefix, endpoint.method, endpoint.path);
    let name = base;
    for (let n = 2; used.has(name); n += 1) name = `${base}-${n}`;
    used.add(name);
    return { name, ...endpoint };
  });
}

/**
 * Groups every contract's derived routes into endpoints, one per method and path, in an order Express
 * can match. Deterministic: the same contracts in any order give identical output. Conflicts are
 * returned, never thrown, and never resolved by input order.
 */
export function buildEndpointSpecs(contracts: readonly Contract[], options: EndpointSpecOptions = {}): EndpointSpecs {
  const prefix = options.prefix ?? DEFAULT_ENDPOINT_PREFIX;
  const groups = new Map<string, OwnedRoute[]>();
  const excluded = new Set(options.excluded);
  for (const contract of [...contracts].sort(compareContracts)) {
    if (excluded.has(contract.messageType)) continue;
    for (const route of deriveRoutes(contract)) {
      const key = routeKey(route.method, route.path);
      const list = groups.get(key) ?? [];
      // An override listing one path twice is not a conflict with itself.
      if (list.some((o) => o.contract === contract && o.route.whenQuery === route.whenQuery)) continue;
      list.push({ route, contract });
      groups.set(key, list);
    }
  }
  const ordered = [...groups.values()].sort((a, b) => {
    const l = (a[0] as OwnedRoute).route;
    const r = (b[0] as OwnedRoute).route;
    return comparePaths(l.path, r.path) || compareText(l.method, r.method);
  });
  const conflicts: Conflict[] = [];
  const endpoints = assignNames(
    ordered.map((owned) => buildEndpoint(owned, conflicts)),
    prefix,
  );
  return { endpoints, conflicts };
}
