import { resolveEdgeSettings, type EdgeSettings } from './edge';
import { ROUTING_MODES, type RoutingMode } from '../routing/routing-mode';
import { DEFAULT_MAX_JSON_DEPTH } from '../request/json-depth';
import { DEFAULT_MAX_REPLY_BYTES } from '../bus/constants';
import { resolveBusTrustSettings, type BusTrustSettings } from './bus-trust';
import { BREAKING_CHANGE_MODES, type BreakingChangeMode } from '../compat/gate';
import { envValue, givenValue, SETTING_DECLARATIONS, type SettingKey } from './declarations';
import {
  DEFAULT_CIRCUIT_FAILURE_THRESHOLD,
  DEFAULT_CIRCUIT_OPEN_SECONDS,
  DEFAULT_DISCOVERY_GRACE_MS,
  DEFAULT_MAX_IN_FLIGHT_PER_SERVICE,
  DEFAULT_MAX_REQUEST_TIMEOUT_MS,
  DEFAULT_REQUEST_TIMEOUT_MS,
  LOG_FORMATS,
  METRICS_NAMINGS,
  type LogFormat,
  type MetricsNaming,
} from './defaults';
import { resolveRouteExclusionSettings, type RouteExclusionSettings } from './route-exclusion';
import { authFromEnv, type AuthConfig } from './auth';

/**
 * Plugin settings: the `plugins.contracts` block of system.config.yml, with environment variables as the
 * fallback for what the block leaves out (containers configure by environment).
 */
export interface Settings extends EdgeSettings, BusTrustSettings, RouteExclusionSettings {
  /** `embedded` (in-process bus) or an amqp:// / amqps:// URL. */
  busUrl: string;
  /** Prefix of every exchange and queue, so deployments (and test runs) sharing a broker stay apart. */
  busPrefix: string;
  /** Default upstream deadline when a contract has no timeoutMs (30000). */
  requestTimeoutMs: number;
  /** The longest deadline a contract's timeoutMs gets; a longer one is cut to it (default 60000, or requestTimeoutMs if larger). */
  maxRequestTimeoutMs: number;
  /** A service's reply over this many bytes is answered 502 unparsed. */
  maxReplyBytes: number;
  /** Names of generated apiEndpoints/pipelines start with this; everything else in the file is hand-written. */
  /** Requests one service may have awaiting replies; more are answered 503 at once (plugin/resilience/). */
  maxInFlightPerService: number;
  /** Consecutive 502/504 outcomes of one service that open its circuit; 0: no circuit breaker. */
  circuitFailureThreshold: number;
  /** How long an open circuit refuses before one trial request. */
  circuitOpenSeconds: number;
  generatedPrefix: string;
  /** Write discovered routes into gateway.config.yml (off: serve only what the file already has). */
  writeConfig: boolean;
  bodyLimitBytes: number;
  /** Request bodies nesting objects/arrays deeper than this get 400 VALIDATION_ERROR, before anything parses them. */
  maxJsonDepth: number;
  /** Lease the gateway asks services for; a service silent for this long is dropped. */
  leaseCheckIntervalMs: number;
  /** Wait this long after a change of contracts before rewriting the file, so a burst makes one write. */
  writeDebounceMs: number;
  /** A service result that does not match the contract's outputSchema: 502 when true, logged and passed on when false. */
  strictOutput: boolean;
  /** Serve GET /debug/contracts (the registry's cache); off by default because it shows service topology. */
  debugEndpoints: boolean;
  /** SIGTERM: how long requests in flight may take before they are answered 503 (plugin/shutdown). */
  shutdownGraceMs: number;
  /**
   * After a start or a bus reconnect, how long after asking the services to announce an unknown /api route is
   * answered 503 (routes not all heard yet) instead of 404 (plugin/contracts/discovery-grace.ts); 0: no grace.
   */
  discoveryGraceMs: number;
  /**
   * How generated routes reach the host (plugin/routing/): `endpoints`, one apiEndpoint per route in
   * gateway.config.yml; `table`, one apiEndpoint for all of them and the plugin's own path table, for deployments
   * with hundreds of routes (the host tries its routes one after another); `auto` (default), endpoints up to
   * AUTO_TABLE_ABOVE routes, the table above.
   */
  routing: RoutingMode;
  /** Port of the Prometheus `GET /metrics` listener, apart from the API's port; undefined: no metrics at all. */
  metricsPort?: number;
  /** Address that listener binds to (0.0.0.0 by default: Prometheus scrapes from another host or container). */
  metricsHost: string;
  /** The request-duration histogram's names: the gateway's own, or OpenTelemetry's HTTP semantic conventions. */
  metricsNaming: MetricsNaming;
  /** One log line per answered request (method, route, status, duration, ids). */
  accessLog: boolean;
  /** `json` (pino's shape) or `ecs`: one JSON object per line; `text`: human-readable lines. */
  logFormat: LogFormat;
  /** A change to a served contract that breaks its clients: accepted silently, accepted and reported, or refused. */
  breakingChanges: BreakingChangeMode;
  /**
   * Token verification and development mode, from the environment (JWT_SECRET, JWKS_URI, …, plugin/settings/auth.ts):
   * what contract-rate-limit, the discovery answer and every jwt-dev-auth step use, a step's overrides merged onto it.
   */
  auth: AuthConfig;
}

/** The plugin's settings schema, derived from the declarations (declarations.ts): one property per setting. */
export const SETTINGS_SCHEMA = {
  $id: 'http://express-gateway.io/schemas/plugins/contracts.json',
  type: 'object',
  properties: Object.fromEntries(Object.entries(SETTING_DECLARATIONS).map(([key, d]) => [key, d.schema])) as {
    readonly [K in SettingKey]: (typeof SETTING_DECLARATIONS)[K]['schema'];
  },
} as const;

function intFrom(v: unknown, fallback: number): number {
  const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
  return Number.isInteger(n) && n > 0 ? n : fallback;
}

/** Like intFrom, and 0 (given as a number or as text) stays 0. */
function zeroOrInt(v: unknown, fallback: number): number {
  return v === 0 || (typeof v === 'string' && v.trim() === '0') ? 0 : intFrom(v, fallback);
}

function routingMode(v: unknown): RoutingMode {
  const text = typeof v === 'string' ? v.trim() : '';
  return (ROUTING_MODES as readonly string[]).includes(text) ? (text as RoutingMode) : 'auto';
}

function breakingChangeMode(v: unknown): BreakingChangeMode {
  const text = typeof v === 'string' ? v.trim() : '';
  return (BREAKING_CHANGE_MODES as readonly string[]).includes(text) ? (text as BreakingChangeMode) : 'warn';
}

function metricsPort(v: unknown): number | undefined {
  const port = intFrom(v, 0);
  return port > 0 && port <= 65535 ? port : undefined;
}

export function resolveSettings(raw: Record<string, unknown> = {}, env: NodeJS.ProcessEnv = process.env): Settings {
  const str = (key: SettingKey, fallback: string): string => {
    const v = givenValue(raw, env, key);
    return typeof v === 'string' && v.trim() !== '' ? v.trim() : fallback;
  };
  const port = metricsPort(givenValue(raw, env, 'metricsPort'));
  const requestTimeoutMs = intFrom(givenValue(raw, env, 'requestTimeoutMs'), DEFAULT_REQUEST_TIMEOUT_MS);
  return {
    ...resolveEdgeSettings(raw, env),
    ...resolveBusTrustSettings(raw, env),
    ...resolveRouteExclusionSettings(raw, env),
    busUrl: str('busUrl', 'embedded'),
    busPrefix: str('busPrefix', 'contracts'),
    requestTimeoutMs,
    maxReplyBytes: intFrom(givenValue(raw, env, 'maxReplyBytes'), DEFAULT_MAX_REPLY_BYTES),
    maxRequestTimeoutMs: intFrom(
      givenValue(raw, env, 'maxRequestTimeoutMs'),
      Math.max(DEFAULT_MAX_REQUEST_TIMEOUT_MS, requestTimeoutMs),
    ),
    maxInFlightPerService: intFrom(givenValue(raw, env, 'maxInFlightPerService'), DEFAULT_MAX_IN_FLIGHT_PER_SERVICE),
    circuitFailureThreshold: zeroOrInt(
      givenValue(raw, env, 'circuitFailureThreshold'),
      DEFAULT_CIRCUIT_FAILURE_THRESHOLD,
    ),
    circuitOpenSeconds: intFrom(givenValue(raw, env, 'circuitOpenSeconds'), DEFAULT_CIRCUIT_OPEN_SECONDS),
    generatedPrefix: str('generatedPrefix', 'contracts-'),
    writeConfig: raw.writeConfig !== false,
    bodyLimitBytes: intFrom(givenValue(raw, env, 'bodyLimitBytes'), 1024 * 1024),
    maxJsonDepth: intFrom(givenValue(raw, env, 'maxJsonDepth'), DEFAULT_MAX_JSON_DEPTH),
    leaseCheckIntervalMs: intFrom(raw.leaseCheckIntervalMs, 1000),
    writeDebounceMs: raw.writeDebounceMs === 0 ? 0 : intFrom(raw.writeDebounceMs, 100),
    // Off unless asked for: a strict gateway turns a service's schema drift into an outage.
    strictOutput: typeof raw.strictOutput === 'boolean' ? raw.strictOutput : envValue(env, 'strictOutput') === 'true',
    debugEndpoints:
      typeof raw.debugEndpoints === 'boolean' ? raw.debugEndpoints : envValue(env, 'debugEndpoints') === 'true',
    routing: routingMode(givenValue(raw, env, 'routing')),
    ...(port !== undefined ? { metricsPort: port } : {}),
    metricsHost: str('metricsHost', '0.0.0.0'),
    metricsNaming: METRICS_NAMINGS.find((n) => n === givenValue(raw, env, 'metricsNaming')) ?? 'prometheus',
    // On unless turned off: an operator expects an access log; a line per request is a cost busy deployments may drop.
    accessLog: typeof raw.accessLog === 'boolean' ? raw.accessLog : envValue(env, 'accessLog') !== 'false',
    logFormat: LOG_FORMATS.find((f) => f === givenValue(raw, env, 'logFormat')) ?? 'text',
    breakingChanges: breakingChangeMode(givenValue(raw, env, 'breakingChanges')),
    shutdownGraceMs: zeroOrInt(givenValue(raw, env, 'shutdownGraceMs'), 10_000),
    discoveryGraceMs: zeroOrInt(givenValue(raw, env, 'discoveryGraceMs'), DEFAULT_DISCOVERY_GRACE_MS),
    auth: authFromEnv(env),
  };
}
