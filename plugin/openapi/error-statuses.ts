import type { Contract, ContractKind, JsonSchema } from '../contracts/types';
import { pathParameterNames } from './paths';

/** Methods whose body the gateway reads (plugin/request/body.ts): a malformed, oversized or non-JSON one is refused. */
const BODY_READ_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** Keywords that describe a schema without restricting what it accepts. */
const ANNOTATIONS = new Set([
  '$schema',
  '$id',
  '$comment',
  'title',
  'description',
  'examples',
  'default',
  'deprecated',
  'readOnly',
  'writeOnly',
]);

/** What the error statuses of a generated route depend on. */
export interface RouteFacts {
  method: string;
  /** The Express path: a path parameter that does not decode is a 400. */
  path: string;
  /** Every contract the route can reach (variants and generic routes reach several). */
  contracts: readonly Contract[];
  kinds: ReadonlyArray<ContractKind | undefined>;
  /** A generic route: the request must name a message type the route serves. */
  dispatch?: 'body' | 'query';
  /** The gateway-wide rate limit is set (settings rateLimitMax). */
  rateLimited: boolean;
  /** The per-address limit of public contracts is on (settings publicRateLimitMax). */
  publicRateLimited: boolean;
}

/**
 * The error statuses a generated route can answer, from the steps of its pipeline:
 * - 400: a body is read (malformed JSON), a path parameter is decoded, a generic route needs `messageType`, or the
 *   input schema can refuse an object (schema-validation);
 * - 401: jwt-dev-auth on a non-public route; on a public one the contract's service checks the credentials the
 *   request carries itself (login, token refresh) and answers INVALID_CREDENTIALS / INVALID_TOKEN;
 * - 403: the permission step, when a contract requires a permission;
 * - 404: always: HANDLER_NOT_FOUND once the contract is withdrawn or its last lease runs out, and the service's NOT_FOUND;
 * - 409, 422: create and update, where a service refuses a duplicate or a business rule (RESOURCE_CONFLICT, VALIDATION_ERROR);
 * - 413, 415: a body is read;
 * - 429: a rate limit applies (the contract's own, the gateway-wide one, or the per-address one of public contracts);
 * - 500, 502, 503, 504: always (a broken contract schema, the service going away or missing, the bus, the deadline).
 * Any other code a service answers with is the operation's `default` response.
 */
export function errorStatusesFor(route: RouteFacts): number[] {
  const statuses = new Set([401, 404, 500, 502, 503, 504]);
  const readsBody = BODY_READ_METHODS.has(route.method);
  if (readsBody) for (const s of [413, 415]) statuses.add(s);
  if (
    readsBody ||
    route.dispatch !== undefined ||
    pathParameterNames(route.path).length > 0 ||
    route.contracts.some((c) => refusesInput(c.inputSchema))
  ) {
    statuses.add(400);
  }
  if (route.contracts.some((c) => c.public !== true && c.requiredPermissions.length > 0)) statuses.add(403);
  if (route.kinds.some((k) => k === 'create' || k === 'update')) for (const s of [409, 422]) statuses.add(s);
  if (
    route.rateLimited ||
    route.contracts.some((c) => c.rateLimit !== undefined || (route.publicRateLimited && c.public === true))
  )
    statuses.add(429);
  return [...statuses].sort((a, b) => a - b);
}

/** False for a schema every object passes (`{}`, `{ type: 'object' }`, annotations): validation cannot fail. */
function refusesInput(schema: JsonSchema): boolean {
  return Object.entries(schema).some(([key, value]) => {
    if (ANNOTATIONS.has(key)) return false;
    if (key === 'type') return !(value === 'object' || (Array.isArray(value) && value.includes('object')));
    return true;
  });
}
