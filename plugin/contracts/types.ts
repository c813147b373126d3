/** JSON Schema as carried in a contract; validated by ajv where it matters. */
export type JsonSchema = Record<string, unknown>;

/** Explicit routes for a contract whose message type the naming rules cannot map. */
export interface HttpOverride {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH';
  paths: string[];
}

/** What a service announces for each message type it handles (docs/bus-protocol.md). */
export interface Contract {
  messageType: string;
  targetService: string;
  inputSchema: JsonSchema;
  outputSchema: JsonSchema;
  requiredPermissions: string[];
  http?: HttpOverride;
  public?: boolean;
  timeoutMs?: number;
  /** This contract's own request budget per caller; replaces the gateway-wide limit for its requests. */
  rateLimit?: ContractRateLimit;
  /** Clients should move off this contract: its routes answer with a Deprecation header (docs/compatibility.md). */
  deprecated?: boolean;
  /** When its routes are expected to go (ISO 8601 date or date-time): the Sunset header. */
  sunset?: string;
}

/** `max` requests per caller per `windowMs` (default 60000) window. */
export interface ContractRateLimit {
  max: number;
  windowMs?: number;
}

/**
 * A service instance's announcement; `ttlMs` is its lease. An empty `contracts` with `withdrawn` ends it.
 * `maintenance`: the instance is in maintenance; while every live instance of the service says so, its routes answer
 * 503 with `Retry-After: retryAfterSeconds` and nothing is sent to it. An announcement without it ends it.
 */
export interface Announcement {
  service: string;
  instanceId: string;
  contracts: Contract[];
  ttlMs: number;
  withdrawn?: boolean;
  maintenance?: Maintenance;
}

/** An instance's maintenance, as announced (docs/bus-protocol.md "Maintenance"). */
export interface Maintenance {
  retryAfterSeconds: number;
}

export type HttpMethod = HttpOverride['method'];

/** The shape a message type has under the naming table. */
export type ContractKind = 'create' | 'update' | 'delete' | 'get' | 'list' | 'command' | 'query';

/**
 * One HTTP route derived from a contract. `whenQuery` qualifies a route that shares its method and path
 * with another: the request goes to this contract only when that query-string parameter is present
 * (GET /api/users?userId=… is a get, GET /api/users is a list).
 * `dispatch` marks the generic routes (/api/actions, /api/data) that many contracts share: the caller
 * names the message type in the request.
 */
export interface DerivedRoute {
  method: HttpMethod;
  path: string;
  messageType: string;
  kind: ContractKind;
  whenQuery?: string;
  dispatch?: 'body' | 'query';
}
