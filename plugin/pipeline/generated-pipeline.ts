import type { EndpointSpec } from '../contracts/endpoint-specs';
import { corsAction, type CorsAction } from '../edge/cors';
import { GENERATED_POLICIES, HOST_CORS, POLICY_NAMES } from '../policy-names';

/**
 * The `policies:` list of the one pipeline every contract route shares. Its steps carry no route: each request's
 * route is the `contract:` (routing/route-action) written on its apiEndpoint entry, read by routeOf(). One pipeline instead of
 * one per route keeps the host's memory and reload time flat as the number of contracts grows.
 * `cors` is the host cors step's action (plugin settings).
 */
export function contractPipeline(cors: CorsAction = corsAction()): Array<Record<string, unknown>> {
  return GENERATED_POLICIES.map((name) =>
    name === HOST_CORS ? { [name]: [{ action: cors }] } : { [name]: [{ action: {} }] },
  );
}

/**
 * One generated endpoint answers every CORS preflight under /api (OPTIONS on any /api path → 204), before
 * authentication and whether or not the path exists; the contract endpoints list only their own method.
 */
export interface PreflightEndpoint {
  name: string;
  method: 'OPTIONS';
  path: string;
  paths: string[];
  preflight: true;
}

export function preflightEndpoint(prefix: string): PreflightEndpoint {
  return { name: `${prefix}options-api`, method: 'OPTIONS', path: '/api', paths: ['/api', '/api/*'], preflight: true };
}

/**
 * `routing: table`: one endpoint instead of one per route, mounted on every first path segment the routes use
 * (`/api` and everything under it, for derived routes), whose pipeline starts with route-table, the plugin's own
 * router; a request it does not know goes on to the entries after it.
 * Mounted with a `pathRegex` without capture groups rather than `paths: ['/api', '/api/*']`: a `*` path gives the
 * request a numeric parameter, which Express copies (mergeParams) at every step of the pipeline, dearer for an
 * index key than for none; the table finds the route's parameters itself.
 */
export interface TableEndpoint {
  name: string;
  method: '*';
  path: string;
  pathRegex: string;
  table: true;
}

export function tableEndpoint(prefix: string, routePaths: readonly string[]): TableEndpoint {
  // With no route yet, /api: where every derived route lives.
  const roots = routePaths.length ? [...new Set(routePaths.map((p) => p.split('/')[1] ?? ''))].sort() : ['api'];
  // A first segment that is a parameter matches any segment (the table's segments are :names or plain characters).
  const named = roots
    .filter((root) => root !== '')
    .map((root) => (root.startsWith(':') ? '[^/]+' : caseInsensitive(root)));
  const alternatives = named.length ? [`/(?:${named.join('|')})(?:/.*)?`] : [];
  if (roots.includes('')) alternatives.push('/');
  return {
    name: `${prefix}api`,
    method: '*',
    path: `/${roots[0]}`,
    pathRegex: `^(?:${alternatives.join('|')})$`,
    table: true,
  };
}

/**
 * A path segment as a pattern matching it in any case, as Express matches `paths` (the host compiles `pathRegex`
 * without flags, and the path table compares static segments case-insensitively).
 */
function caseInsensitive(segment: string): string {
  return [...segment]
    .map((c) =>
      c.toLowerCase() !== c.toUpperCase()
        ? `[${c.toLowerCase()}${c.toUpperCase()}]`
        : c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&'),
    )
    .join('');
}

/** The pipeline of the table endpoint: route-table, then the lifecycle of any contract route. */
export function tablePipeline(cors: CorsAction = corsAction()): Array<Record<string, unknown>> {
  return [{ [POLICY_NAMES.routeTable]: [{ action: {} }] }, ...contractPipeline(cors)];
}

/** Either kind of generated endpoint, and the pipeline each gets. */
export type GeneratedEndpoint = EndpointSpec | PreflightEndpoint | TableEndpoint;

export function generatedPipeline(
  endpoint: GeneratedEndpoint,
  cors: CorsAction = corsAction(),
): Array<Record<string, unknown>> {
  if ('preflight' in endpoint) return edgeSteps(cors);
  if ('table' in endpoint) return tablePipeline(cors);
  return contractPipeline(cors);
}

/** A contract route's endpoint, as opposed to the preflight and not-found endpoints the writer adds. */
export function isContractEndpoint(endpoint: object): endpoint is EndpointSpec {
  return (
    'messageTypes' in endpoint && !('preflight' in endpoint) && !('catchAll' in endpoint) && !('table' in endpoint)
  );
}

/**
 * The first two steps of every generated pipeline, for a generated endpoint with steps of its own after them (a
 * catch-all's answer needs the trace ids and the CORS headers as much as a contract route's).
 */
export function edgeSteps(cors: CorsAction = corsAction()): Array<Record<string, unknown>> {
  return [{ [POLICY_NAMES.requestTrace]: [{ action: {} }] }, { [HOST_CORS]: [{ action: cors }] }];
}
