import { DEFAULT_ANNOUNCEMENT_LIMITS } from '../contracts/limits';

/**
 * The defaults the settings' declarations (declarations.ts) describe and their resolvers apply: in a module of
 * their own so both import them without importing each other.
 */

export const DEFAULT_DISCOVERY_GRACE_MS = 5000;
/** The longest a contract may make a caller wait unless maxRequestTimeoutMs says otherwise. */
export const DEFAULT_MAX_REQUEST_TIMEOUT_MS = 60_000;
/** A contract's deadline when it names none, unless requestTimeoutMs says otherwise. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

export type LogFormat = 'text' | 'json' | 'ecs';
export const LOG_FORMATS: readonly LogFormat[] = ['text', 'json', 'ecs'];

/**
 * The names of the request-duration histogram (plugin/observability/metrics.ts): the gateway's own,
 * `contracts_gateway_http_request_duration_seconds{route,method,status}`, or OpenTelemetry's HTTP semantic
 * conventions as Prometheus names them, `http_server_request_duration_seconds{http_route,http_request_method,
 * http_response_status_code}`.
 */
export type MetricsNaming = 'prometheus' | 'otel';
export const METRICS_NAMINGS: readonly MetricsNaming[] = ['prometheus', 'otel'];

export type StoreFailureMode = 'open' | 'closed';
export const STORE_FAILURE_MODES: readonly StoreFailureMode[] = ['open', 'closed'];
export const DEFAULT_STORE_TIMEOUT_MS = 500;

export const DEFAULT_HEADERS_TIMEOUT_MS = 10_000;
export const DEFAULT_REQUEST_RECEIVE_TIMEOUT_MS = 30_000;

export const DEFAULT_RATE_WINDOW_MS = 60000;

/**
 * Requests per client address per window to public contracts (login, refresh, external login) unless set; `off`
 * turns it off. Far above what the people behind one address log in, far below a flood.
 */
export const DEFAULT_PUBLIC_RATE_LIMIT_MAX = 60;
export const PUBLIC_RATE_LIMIT_OFF = 'off';

/** The announcement limits' defaults, from the one place they are set. */
export const D = DEFAULT_ANNOUNCEMENT_LIMITS;

/** A service announces a 15 s lease and renews every third of it (SDK): this cap leaves room for that, and a little more. */
export const DEFAULT_MAX_LEASE_MS = 30_000;

/** Defaults of the retained-bytes budget (docs/operations.md says how the heap they cost was measured). */
export const DEFAULT_RETAINED_BYTES_PER_USER = 1024 * 1024;
export const DEFAULT_RETAINED_BYTES_TOTAL = 8 * 1024 * 1024;

/**
 * Requests one service may have waiting for replies before more are refused 503 at once (load shedding): eight
 * times what the bench's 64 connections ever put on one service, so only a service that has stopped keeping up
 * meets it, and low enough that one stuck service cannot pin an unbounded number of pending requests.
 */
export const DEFAULT_MAX_IN_FLIGHT_PER_SERVICE = 512;
/** Consecutive 502/504 outcomes of one service that open its circuit: a few in a row, not one unlucky request. */
export const DEFAULT_CIRCUIT_FAILURE_THRESHOLD = 5;
/** How long an open circuit refuses before one trial request: a restarting service is usually back within it. */
export const DEFAULT_CIRCUIT_OPEN_SECONDS = 10;
