import { AUTO_TABLE_ABOVE, ROUTING_MODES } from '../routing/routing-mode';
import { DEFAULT_MAX_JSON_DEPTH } from '../request/json-depth';
import { DEFAULT_ANNOUNCEMENT_BYTES_PER_SECOND, DEFAULT_MAX_REPLY_BYTES } from '../bus/constants';
import { BREAKING_CHANGE_MODES } from '../compat/gate';
import { POLICY_NAMES } from '../policy-names';
import {
  D,
  DEFAULT_CIRCUIT_FAILURE_THRESHOLD,
  DEFAULT_CIRCUIT_OPEN_SECONDS,
  DEFAULT_DISCOVERY_GRACE_MS,
  DEFAULT_HEADERS_TIMEOUT_MS,
  DEFAULT_MAX_IN_FLIGHT_PER_SERVICE,
  DEFAULT_MAX_LEASE_MS,
  DEFAULT_MAX_REQUEST_TIMEOUT_MS,
  DEFAULT_PUBLIC_RATE_LIMIT_MAX,
  DEFAULT_REQUEST_RECEIVE_TIMEOUT_MS,
  DEFAULT_RETAINED_BYTES_PER_USER,
  DEFAULT_RETAINED_BYTES_TOTAL,
  DEFAULT_STORE_TIMEOUT_MS,
  LOG_FORMATS,
  METRICS_NAMINGS,
  PUBLIC_RATE_LIMIT_OFF,
  STORE_FAILURE_MODES,
} from './defaults';

/**
 * Every setting of the plugin, declared once: the key under `plugins.contracts`, the environment variable that
 * stands in for it, its JSON Schema (constraints, and the one-line description the host shows) and its row of
 * docs/configuration.md. The schema, the environment map and the table (`npm run docs:settings`) are derived from
 * these; the resolvers in this folder turn the checked values into Settings.
 */
export interface SettingDeclaration {
  /** The environment variable read when the block leaves the setting out; none: YAML only. */
  readonly env?: string;
  readonly schema: Readonly<Record<string, unknown>>;
  /** The cells of its row in docs/configuration.md (Markdown). */
  readonly doc: { readonly default: string; readonly allowed: string; readonly meaning: string };
}

/** A message type as the registry accepts it (plugin/contracts/announcement-validation.ts). */
const MESSAGE_TYPE = '[A-Za-z0-9][A-Za-z0-9._:-]{0,199}';

const limit = (description: string, maximum: number) =>
  ({ type: 'integer', minimum: 1, maximum, description }) as const;

const SERVICE_LIST = { type: 'array', items: { type: 'string', minLength: 1 } } as const;

/** In the order of docs/configuration.md's table. */
export const SETTING_DECLARATIONS = {
  busUrl: {
    env: 'BUS_URL',
    schema: { type: 'string', description: 'embedded, or amqp://user:pass@host:5672/vhost (env BUS_URL)' },
    doc: {
      default: '`embedded`',
      allowed: '`embedded`, `amqp://…`, `amqps://…` with a host, or several of those separated by commas',
      meaning:
        "`embedded`: the in-process bus, for services in the gateway's own process (`npm start`); otherwise the RabbitMQ URL, `amqp://user:pass@host:5672/vhost`, or the nodes of a cluster, `amqp://u:p@h1:5672,amqp://u:p@h2:5672,amqp://u:p@h3:5672` (one user and vhost for all: a mixed list stops the start in one line). The process connects to a random one and moves to the next when it loses it ([operations.md](operations.md#running-more-than-one))",
    },
  },
  busPrefix: {
    env: 'BUS_PREFIX',
    schema: {
      type: 'string',
      pattern: '^[A-Za-z0-9_.-]{1,64}$',
      description: 'exchange/queue name prefix (env BUS_PREFIX)',
    },
    doc: {
      default: '`contracts`',
      allowed: '`[A-Za-z0-9_.-]{1,64}`',
      meaning: 'prefix of every exchange and queue, so deployments sharing a broker stay apart',
    },
  },
  requestTimeoutMs: {
    env: 'REQUEST_TIMEOUT_MS',
    schema: { type: 'integer', minimum: 1, maximum: 600000 },
    doc: {
      default: '`30000`',
      allowed: '1–600000',
      meaning: "the deadline for a service's reply when the contract has no `timeoutMs`; 504 `TIMEOUT` after it",
    },
  },
  maxReplyBytes: {
    env: 'MAX_REPLY_BYTES',
    schema: {
      type: 'integer',
      minimum: 1024,
      maximum: 268435456,
      description: `a service's reply over this many bytes is answered 502 unparsed (env MAX_REPLY_BYTES), default ${DEFAULT_MAX_REPLY_BYTES}`,
    },
    doc: {
      default: '`1048576`',
      allowed: '1024–268435456',
      meaning:
        "a service's reply larger than this is answered 502 `SERVICE_UNAVAILABLE` without being parsed (logged once a minute per service): parsing a reply of many small values takes many times its size in memory, so one service cannot exhaust the gateway's heap with one reply. A reply nesting objects/arrays deeper than 256 levels is answered the same way",
    },
  },
  maxRequestTimeoutMs: {
    env: 'MAX_REQUEST_TIMEOUT_MS',
    schema: {
      type: 'integer',
      minimum: 1,
      maximum: 600000,
      description: `a contract's timeoutMs above it is cut to it (env MAX_REQUEST_TIMEOUT_MS), default ${DEFAULT_MAX_REQUEST_TIMEOUT_MS} or requestTimeoutMs if larger`,
    },
    doc: {
      default: '`60000`, or `requestTimeoutMs` if larger',
      allowed: '1–600000',
      meaning:
        "the longest deadline a contract gets: a contract's `timeoutMs` above it is cut to it (logged once per contract; `GET /api/discovery/contracts` shows `effectiveTimeoutMs` and `timeoutClamped`), so an announcement cannot make callers wait for ever",
    },
  },
  maxInFlightPerService: {
    env: 'MAX_IN_FLIGHT_PER_SERVICE',
    schema: {
      type: 'integer',
      minimum: 1,
      maximum: 1000000,
      description: `requests one service may have awaiting replies; more are answered 503 at once (env MAX_IN_FLIGHT_PER_SERVICE), default ${DEFAULT_MAX_IN_FLIGHT_PER_SERVICE}`,
    },
    doc: {
      default: `\`${DEFAULT_MAX_IN_FLIGHT_PER_SERVICE}\``,
      allowed: '1–1000000',
      meaning:
        "load shedding, a bulkhead per service: while this many requests to one service await its replies, further requests to that service's routes are answered 503 `SERVICE_UNAVAILABLE` with `Retry-After` at once, and other services are not affected. The default is eight times what the bench's 64 connections put on one service ([operations.md](operations.md#when-a-service-is-slow-or-down))",
    },
  },
  circuitFailureThreshold: {
    env: 'CIRCUIT_FAILURE_THRESHOLD',
    schema: {
      type: 'integer',
      minimum: 0,
      maximum: 10000,
      description: `consecutive 502/504 outcomes of one service that open its circuit; 0: no circuit breaker (env CIRCUIT_FAILURE_THRESHOLD), default ${DEFAULT_CIRCUIT_FAILURE_THRESHOLD}`,
    },
    doc: {
      default: `\`${DEFAULT_CIRCUIT_FAILURE_THRESHOLD}\``,
      allowed: '0–10000',
      meaning:
        "a circuit breaker per service: this many consecutive 502/504 outcomes from the bus (deadline passed, as when a work queue has no consumer; broken reply) open the service's circuit, and its routes answer 503 `SERVICE_UNAVAILABLE` with `Retry-After` at once, sending nothing. An error a service replies on purpose never counts. `0`: no circuit breaker ([operations.md](operations.md#when-a-service-is-slow-or-down))",
    },
  },
  circuitOpenSeconds: {
    env: 'CIRCUIT_OPEN_SECONDS',
    schema: {
      type: 'integer',
      minimum: 1,
      maximum: 3600,
      description: `how long an open circuit refuses before one trial request (env CIRCUIT_OPEN_SECONDS), default ${DEFAULT_CIRCUIT_OPEN_SECONDS}`,
    },
    doc: {
      default: `\`${DEFAULT_CIRCUIT_OPEN_SECONDS}\``,
      allowed: '1–3600',
      meaning:
        'how long an open circuit refuses (its `Retry-After`); then one trial request goes through (half-open): a reply closes the circuit, another 502/504 opens it again for as long',
    },
  },
  bodyLimitBytes: {
    env: 'BODY_LIMIT_BYTES',
    schema: { type: 'integer', minimum: 1 },
    doc: {
      default: '`1048576`',
      allowed: '≥ 1',
      meaning:
        'larger request bodies get 413 `PAYLOAD_TOO_LARGE`; a `Content-Length` over it is answered at once, before any of the body is read, and the connection closed',
    },
  },
  headersTimeoutMs: {
    env: 'HEADERS_TIMEOUT_MS',
    schema: {
      type: 'integer',
      minimum: 1000,
      maximum: 600000,
      description: `the request line and headers must arrive within this many ms, else 408 (env HEADERS_TIMEOUT_MS), default ${DEFAULT_HEADERS_TIMEOUT_MS}`,
    },
    doc: {
      default: '`10000`, or `requestReceiveTimeoutMs` when that is shorter',
      allowed: '1000–600000, at most `requestReceiveTimeoutMs`',
      meaning:
        'the request line and headers must arrive within it; else 408 `REQUEST_TIMEOUT` and the connection is closed',
    },
  },
  requestReceiveTimeoutMs: {
    env: 'REQUEST_RECEIVE_TIMEOUT_MS',
    schema: {
      type: 'integer',
      minimum: 1000,
      maximum: 3600000,
      description: `the whole request, body included, must arrive within this many ms, else 408 (env REQUEST_RECEIVE_TIMEOUT_MS), default ${DEFAULT_REQUEST_RECEIVE_TIMEOUT_MS}`,
    },
    doc: {
      default: '`30000`',
      allowed: '1000–3600000',
      meaning:
        "the whole request, headers and body, must arrive within it (a body trickling in is cut); else 408 `REQUEST_TIMEOUT` and the connection is closed. Checked twice a second. Not the deadline of the service's reply (`requestTimeoutMs`)",
    },
  },
  maxConnections: {
    env: 'MAX_CONNECTIONS',
    schema: {
      type: 'integer',
      minimum: 1,
      description:
        'open connections the API server keeps at most; more are closed at once (env MAX_CONNECTIONS); unset: no cap',
    },
    doc: {
      default: 'unset: no cap',
      allowed: '≥ 1',
      meaning:
        "open connections the API's server holds at most (keep-alive ones included); one more is closed as it is accepted, unanswered, and a warning is logged at most once a minute; the open ones keep working",
    },
  },
  maxJsonDepth: {
    env: 'MAX_JSON_DEPTH',
    schema: {
      type: 'integer',
      minimum: 1,
      maximum: 1000,
      description: `deepest nesting of objects/arrays a request body may have (env MAX_JSON_DEPTH), default ${DEFAULT_MAX_JSON_DEPTH}`,
    },
    doc: {
      default: '`64`',
      allowed: '1–1000',
      meaning:
        'request bodies nesting objects/arrays deeper get 400 `VALIDATION_ERROR`, checked on the raw bytes before parsing',
    },
  },
  routing: {
    env: 'CONTRACT_ROUTING',
    schema: {
      type: 'string',
      enum: ROUTING_MODES,
      description: `auto (default: one apiEndpoint per route up to ${AUTO_TABLE_ABOVE} routes, the table above), endpoints (always one per route) or table (one for all, matched by the plugin); env CONTRACT_ROUTING`,
    },
    doc: {
      default: '`auto`',
      allowed: '`auto`, `endpoints`, `table`',
      meaning:
        "how generated routes reach the host: `endpoints`, one apiEndpoint per route in `gateway.config.yml`; `table`, one apiEndpoint for all of them, matched by the plugin's path table; `auto`, endpoints up to 50 routes and the table above (logged when it switches). See [design.md](design.md#routing-modes)",
    },
  },
  generatedPrefix: {
    env: 'GENERATED_PREFIX',
    schema: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,32}$' },
    doc: {
      default: '`contracts-`',
      allowed: '`[A-Za-z0-9_-]{1,32}`',
      meaning: 'names of the generated entries in `gateway.config.yml`; everything else in the file is yours',
    },
  },
  excludeFromGeneratedRoutes: {
    env: 'EXCLUDE_FROM_GENERATED_ROUTES',
    schema: {
      type: ['array', 'string'],
      items: { type: 'string', pattern: `^${MESSAGE_TYPE}$` },
      // The environment's form: message types separated by commas.
      pattern: `^\\s*${MESSAGE_TYPE}(\\s*,\\s*${MESSAGE_TYPE})*\\s*$`,
      description:
        'message types served only by hand-written pipelines: no generated route, no generic dispatch (env EXCLUDE_FROM_GENERATED_ROUTES, comma-separated)',
    },
    doc: {
      default: 'none',
      allowed: 'a list of message types, comma-separated in the environment',
      meaning: `contracts taken off their generated routes and the generic dispatch (\`POST /api/actions\`, \`GET /api/data\` answer 404 for them): only a hand-written pipeline whose \`${POLICY_NAMES.contractRouter}\` names the message type reaches them, e.g. one with stricter steps ([design.md](design.md#hand-written-pipelines))`,
    },
  },
  breakingChanges: {
    env: 'BREAKING_CHANGES',
    schema: {
      type: 'string',
      enum: BREAKING_CHANGE_MODES,
      description:
        'a change to a served contract that breaks its clients: accept, warn (default: accepted, logged, counted, listed in discovery) or refuse (the served version stays); env BREAKING_CHANGES',
    },
    doc: {
      default: '`warn`',
      allowed: '`accept`, `warn`, `refuse`',
      meaning:
        "what an announcement that changes a served contract in a way that breaks its clients gets ([compatibility.md](compatibility.md)): `accept`, served silently; `warn`, served, logged once, counted in `contracts_gateway_breaking_changes_total` and listed in `GET /api/discovery/contracts` with the previous version's hash and the reasons; `refuse`, the served version stays (the announcement's other contracts count), logged, counted and listed the same way",
    },
  },
  writeConfig: {
    schema: { type: 'boolean' },
    doc: {
      default: '`true`',
      allowed: 'boolean',
      meaning: 'write discovered routes into `gateway.config.yml` (`false`: serve only what the file already has)',
    },
  },
  writeDebounceMs: {
    schema: { type: 'integer', minimum: 0, maximum: 60000 },
    doc: {
      default: '`100`',
      allowed: '0–60000',
      meaning: 'a burst of contract changes makes one write',
    },
  },
  leaseCheckIntervalMs: {
    schema: { type: 'integer', minimum: 100 },
    doc: {
      default: '`1000`',
      allowed: '≥ 100',
      meaning: 'how often expired service leases are looked for',
    },
  },
  strictOutput: {
    env: 'STRICT_OUTPUT',
    schema: {
      type: 'boolean',
      description: 'answer 502 when a result does not match its outputSchema (env STRICT_OUTPUT=true)',
    },
    doc: {
      default: '`false`',
      allowed: 'boolean',
      meaning:
        "a service result that does not match the contract's `outputSchema` is answered 502 `SERVICE_UNAVAILABLE` instead of logged and passed on",
    },
  },
  corsOrigins: {
    env: 'CORS_ORIGINS',
    schema: {
      type: ['string', 'array'],
      items: { type: 'string' },
      description: '* (default), or allowed origins: a list or a comma-separated string (env CORS_ORIGINS)',
    },
    doc: {
      default: '`*`',
      allowed: '`*`, a list, or comma-separated in the environment',
      meaning: 'origins allowed to call (`Access-Control-Allow-Origin`)',
    },
  },
  corsCredentials: {
    env: 'CORS_CREDENTIALS',
    schema: {
      type: 'boolean',
      description:
        'send Access-Control-Allow-Credentials: true (env CORS_CREDENTIALS=true); reflects the Origin when origins are *',
    },
    doc: {
      default: '`false`',
      allowed: 'boolean',
      meaning:
        "send `Access-Control-Allow-Credentials: true`; with `*` origins the request's `Origin` is reflected, so give a list of origins with it ([security.md](security.md#cors))",
    },
  },
  corsAllowPatch: {
    env: 'CORS_ALLOW_PATCH',
    schema: { type: 'boolean', description: 'list PATCH among the allowed methods (env CORS_ALLOW_PATCH=true)' },
    doc: {
      default: '`false`',
      allowed: 'boolean',
      meaning: 'list `PATCH` among the allowed methods',
    },
  },
  rateLimitMax: {
    env: 'RATE_LIMIT_MAX',
    schema: {
      type: 'integer',
      minimum: 1,
      description: 'gateway-wide requests per caller per window (env RATE_LIMIT_MAX); unset: no limit',
    },
    doc: {
      default: 'none: no limit',
      allowed: '≥ 1',
      meaning:
        "gateway-wide requests per caller per window; a contract's `rateLimit` replaces it for that contract's requests",
    },
  },
  rateLimitWindowMs: {
    env: 'RATE_LIMIT_WINDOW_MS',
    schema: {
      type: 'integer',
      minimum: 1000,
      maximum: 86400000,
      description: 'rate limit window in ms (env RATE_LIMIT_WINDOW_MS), default 60000',
    },
    doc: {
      default: '`60000`',
      allowed: '1000–86400000',
      meaning: 'the gateway-wide window, in ms',
    },
  },
  publicRateLimitMax: {
    env: 'PUBLIC_RATE_LIMIT_MAX',
    schema: {
      anyOf: [
        { type: 'integer', minimum: 1 },
        { type: 'string', const: PUBLIC_RATE_LIMIT_OFF },
      ],
      description: `requests per client address per window to public contracts (env PUBLIC_RATE_LIMIT_MAX), default ${DEFAULT_PUBLIC_RATE_LIMIT_MAX}; off: no such limit`,
    },
    doc: {
      default: `\`${DEFAULT_PUBLIC_RATE_LIMIT_MAX}\``,
      allowed: '≥ 1, or `off`',
      meaning:
        "requests per client address per window to every public contract (the reference services' login, refresh and external login), whatever token they carry, counted apart from the other limits; over it, 429 `RATE_LIMIT_EXCEEDED` with `Retry-After`. Only `off` turns it off ([security.md](security.md#login-floods))",
    },
  },
  publicRateLimitWindowMs: {
    env: 'PUBLIC_RATE_LIMIT_WINDOW_MS',
    schema: {
      type: 'integer',
      minimum: 1000,
      maximum: 86400000,
      description: 'window of publicRateLimitMax in ms (env PUBLIC_RATE_LIMIT_WINDOW_MS), default 60000',
    },
    doc: {
      default: '`60000`',
      allowed: '1000–86400000',
      meaning: 'the window of `publicRateLimitMax`, in ms',
    },
  },
  rateLimitPrefix: {
    env: 'RATE_LIMIT_PREFIX',
    schema: {
      type: 'string',
      pattern: '^[A-Za-z0-9_.-]{1,64}$',
      description: 'key namespace of the rate limit counters (env RATE_LIMIT_PREFIX), default contracts',
    },
    doc: {
      default: '`contracts`',
      allowed: '`[A-Za-z0-9_.-]{1,64}`',
      meaning: 'namespace of the rate-limit counters in Redis (`rl:<prefix>:…`)',
    },
  },
  rateLimitOnStoreFailure: {
    env: 'RATE_LIMIT_ON_STORE_FAILURE',
    schema: {
      type: 'string',
      enum: STORE_FAILURE_MODES,
      description:
        'open (default): rate-limited requests pass while the counter store fails; closed: they get 503 (env RATE_LIMIT_ON_STORE_FAILURE)',
    },
    doc: {
      default: '`open`',
      allowed: '`open`, `closed`',
      meaning:
        'when the counter store (Redis) fails or does not answer in time: `open` lets every rate-limited request through uncounted; `closed` answers each 503 `SERVICE_UNAVAILABLE` with `Retry-After: 5`. Logged, counted in the metrics and shown by `/health` ([operations.md](operations.md#when-redis-fails))',
    },
  },
  rateLimitStoreTimeoutMs: {
    env: 'RATE_LIMIT_STORE_TIMEOUT_MS',
    schema: {
      type: 'integer',
      minimum: 10,
      maximum: 10000,
      description: `how long a request waits for the counter store (env RATE_LIMIT_STORE_TIMEOUT_MS), default ${DEFAULT_STORE_TIMEOUT_MS}`,
    },
    doc: {
      default: '`500`',
      allowed: '10–10000',
      meaning: 'the longest a request waits for the counter store; past it the store counts as failed',
    },
  },
  shutdownGraceMs: {
    env: 'SHUTDOWN_GRACE_MS',
    schema: {
      type: 'integer',
      minimum: 0,
      maximum: 3600000,
      description: 'on SIGTERM, how long requests in flight may finish (env SHUTDOWN_GRACE_MS); default 10000',
    },
    doc: {
      default: '`10000`',
      allowed: '0–3600000',
      meaning:
        'on SIGTERM or SIGINT, how long requests in flight may finish before they are answered 503 ([operations.md](operations.md#graceful-stop))',
    },
  },
  discoveryGraceMs: {
    env: 'DISCOVERY_GRACE_MS',
    schema: {
      type: 'integer',
      minimum: 0,
      maximum: 600000,
      description: `after a start or bus reconnect, how long an unknown /api route is 503 rather than 404 (env DISCOVERY_GRACE_MS); default ${DEFAULT_DISCOVERY_GRACE_MS}`,
    },
    doc: {
      default: '`5000`',
      allowed: '0–600000',
      meaning:
        'after a start or a bus reconnect, for this long after asking every service to announce, an `/api` route no contract serves is answered 503 `SERVICE_UNAVAILABLE` with `Retry-After` instead of 404: the routes may not all be heard yet ([operations.md](operations.md#starting-and-reconnecting-the-discovery-grace)). `0`: no grace',
    },
  },
  debugEndpoints: {
    env: 'DEBUG_ENDPOINTS',
    schema: { type: 'boolean', description: 'serve GET /debug/contracts (env DEBUG_ENDPOINTS=true); off by default' },
    doc: {
      default: '`false`',
      allowed: 'boolean',
      meaning: 'serve `GET /debug/contracts` (unauthenticated: only where the network is trusted)',
    },
  },
  announcementMaxBytes: {
    schema: limit(
      `bytes of one announcement message, checked before parsing (default ${D.maxBytes})`,
      16 * 1024 * 1024,
    ),
    doc: {
      default: '`262144`',
      allowed: '1–16777216',
      meaning:
        'bytes of one announcement message; a larger one is dropped before it is parsed ([operations.md](operations.md#trust-on-the-bus))',
    },
  },
  announcementMaxContracts: {
    schema: limit(`contracts in one announcement (default ${D.maxContracts})`, 100000),
    doc: {
      default: '`200`',
      allowed: '1–100000',
      meaning: 'contracts in one announcement (per service)',
    },
  },
  schemaMaxBytes: {
    schema: limit(`bytes of one inputSchema/outputSchema (default ${D.maxSchemaBytes})`, 16 * 1024 * 1024),
    doc: {
      default: '`65536`',
      allowed: '1–16777216',
      meaning: 'JSON bytes of one `inputSchema` / `outputSchema`',
    },
  },
  schemaMaxDepth: {
    schema: limit(`nesting depth of one schema (default ${D.maxSchemaDepth})`, 1000),
    doc: {
      default: '`32`',
      allowed: '1–1000',
      meaning: 'nesting depth of one schema',
    },
  },
  schemaMaxProperties: {
    schema: limit(
      `object members and array items in one schema, at every depth (default ${D.maxSchemaProperties})`,
      1000000,
    ),
    doc: {
      default: '`4000`',
      allowed: '1–1000000',
      meaning: 'object members and array items of one schema, at every depth',
    },
  },
  serviceMaxInstances: {
    schema: limit(
      `live instances of one service; a new one replaces the one heard from longest ago (default ${D.maxInstancesPerService})`,
      100000,
    ),
    doc: {
      default: '`64`',
      allowed: '1–100000',
      meaning: 'live instances of one service; a new one replaces the one heard from longest ago',
    },
  },
  announcedServicesMax: {
    schema: limit(
      `services with a live instance; announcements of more are refused (default ${D.maxServices})`,
      100000,
    ),
    doc: {
      default: '`256`',
      allowed: '1–100000',
      meaning: 'services with a live instance; announcements of more are refused',
    },
  },
  announcementApplyIntervalMs: {
    schema: {
      type: 'integer',
      minimum: 0,
      maximum: 60000,
      description: 'announcements are applied in one batch per interval (default 1000; a lone one at once)',
    },
    doc: {
      default: '`1000`',
      allowed: '0–60000',
      meaning:
        'announcements are applied in one batch per interval (a lone one at once); a repeat of what an instance announced before only renews its lease',
    },
  },
  announcementBytesPerSecond: {
    schema: limit(
      `announcement bytes taken off the bus per second, per intake queue (default ${DEFAULT_ANNOUNCEMENT_BYTES_PER_SECOND})`,
      1024 * 1024 * 1024,
    ),
    doc: {
      default: '`4194304`',
      allowed: '1–1073741824',
      meaning:
        'announcement bytes taken off the bus per second from each intake queue: every service in `announcementUsers` (or the services file) has a queue of its own (at most 16 messages / 4 × `announcementMaxBytes`), the rest share one (1,000 messages / 4 × `announcementMaxBytes`; none with `busServicesFile`); the broker holds what waits and drops the oldest beyond, and a larger message on arrival',
    },
  },
  configWriteIntervalMs: {
    schema: {
      type: 'integer',
      minimum: 0,
      maximum: 600000,
      description: 'at most one rewrite of gateway.config.yml per interval (default 1000)',
    },
    doc: {
      default: '`1000`',
      allowed: '0–600000',
      meaning: 'at most one rewrite of `gateway.config.yml` (a host reload) per interval',
    },
  },
  ownedMessageTypes: {
    schema: {
      type: 'object',
      additionalProperties: { type: 'array', items: { type: 'string', pattern: '^[A-Za-z0-9._:-]+\\*?$' } },
      description:
        'service → message types only it may announce (exact, or a prefix ending in *); pins win over first-come',
    },
    doc: {
      default: 'none',
      allowed: 'service → list of names or `Prefix*`',
      meaning:
        'e.g. `{ users-service: [ListUsersQuery, "User*"] }`: only that service may announce them; pins win over first-come',
    },
  },
  ownedPathPrefixes: {
    schema: {
      type: 'object',
      additionalProperties: { type: 'array', items: { type: 'string', pattern: '^/' } },
      description: 'service → path prefixes (e.g. /api/users) under which only it may have routes',
    },
    doc: {
      default: 'none',
      allowed: 'service → list of paths',
      meaning:
        'e.g. `{ auth-service: [/api/login, /api/auth] }`: only that service may have routes under them (whole segments)',
    },
  },
  publicContractServices: {
    schema: { ...SERVICE_LIST, description: 'the services that may declare public: true contracts; unset: any' },
    doc: {
      default: 'any',
      allowed: 'list of services',
      meaning: 'the services that may declare `public: true` contracts',
    },
  },
  httpPathServices: {
    schema: { ...SERVICE_LIST, description: 'the services that may declare http.paths; unset: any' },
    doc: {
      default: 'any',
      allowed: 'list of services',
      meaning: 'the services that may declare `http.paths`',
    },
  },
  allowPathsOutsideApi: {
    schema: { type: 'boolean', description: 'accept http.paths outside /api/<name>/ (default false)' },
    doc: {
      default: '`false`',
      allowed: 'boolean',
      meaning: 'accept `http.paths` outside `/api/<name>/`',
    },
  },
  announcementUsers: {
    schema: {
      type: 'object',
      additionalProperties: { type: 'string', minLength: 1 },
      description: "service → the broker user that must have published its announcements (RabbitMQ's user_id)",
    },
    doc: {
      default: 'none',
      allowed: 'service → broker user',
      meaning:
        "the broker user that must publish a service's announcements (RabbitMQ's validated `user_id`); by environment `ANNOUNCEMENT_USERS=service=user,…`",
    },
  },
  requireAnnouncementUser: {
    env: 'REQUIRE_ANNOUNCEMENT_USER',
    schema: {
      type: 'boolean',
      description:
        'refuse announcements without the user_id of their service (announcementUsers, or a user named like the service); env REQUIRE_ANNOUNCEMENT_USER=true',
    },
    doc: {
      default: '`false`',
      allowed: 'boolean',
      meaning:
        'refuse announcements without the `user_id` of their service (`announcementUsers`, or a user named like the service); `true` whenever `busServicesFile` is set',
    },
  },
  busServicesFile: {
    env: 'BUS_SERVICES_FILE',
    schema: {
      type: 'string',
      minLength: 1,
      description:
        'the services file (YAML) of contracts-broker-definitions --services: announcement users, owned message types and paths come from it (env BUS_SERVICES_FILE)',
    },
    doc: {
      default: 'unset',
      allowed: 'a file path',
      meaning:
        'the services file `contracts-broker-definitions --services` writes the broker users from ([operations.md](operations.md#the-services-file)): with it, only the services it lists may announce, each only the message types it owns there, `announcementUsers`, `ownedMessageTypes`, `ownedPathPrefixes`, `publicContractServices` and `httpPathServices` come from it (setting any of them too stops the start), and `requireAnnouncementUser` is on. A missing, unreadable or malformed file, or an unknown key in it, stops the start with one line naming the file',
    },
  },
  firstUsePins: {
    env: 'FIRST_USE_PINS',
    schema: {
      type: 'boolean',
      description:
        'without busServicesFile: the first service to hold a message type keeps it (env FIRST_USE_PINS, default true)',
    },
    doc: {
      default: '`true`',
      allowed: 'boolean',
      meaning:
        "without `busServicesFile`: the first service to hold a message type keeps it through its restarts and the gateway's (with `requireAnnouncementUser`, with its broker user), kept in `dataDir`; another service's claim is refused ([operations.md](operations.md#trust-on-first-use)). `contracts-gateway release-pin` releases one. Ignored with a services file, whose pins decide",
    },
  },
  dataDir: {
    env: 'DATA_DIR',
    schema: {
      type: 'string',
      minLength: 1,
      description: "the gateway's data folder, where the first-use pins are kept (env DATA_DIR)",
    },
    doc: {
      default: '`$EG_CONFIG_DIR/data` (`npm start`: `.gateway/data`); unset without `EG_CONFIG_DIR`',
      allowed: 'a folder path',
      meaning:
        "the gateway's data folder: the first-use pins (`first-use-pins.json`) are kept there; without one they last as long as the process (a warning at start). `npm start` keeps the reference services' embedded database there too",
    },
  },
  maxLeaseMs: {
    env: 'MAX_LEASE_MS',
    schema: {
      type: 'integer',
      minimum: 1000,
      maximum: 3600000,
      description: `longest lease an announcement may hold; longer ones are clamped to it (env MAX_LEASE_MS, default ${DEFAULT_MAX_LEASE_MS})`,
    },
    doc: {
      default: '`30000`',
      allowed: '1000–3600000',
      meaning:
        'the longest lease an announcement holds; a longer one is clamped to it (logged once per service), so the claims of an instance that died without withdrawing lapse within it. The SDK announces 15 s and renews every 5 s',
    },
  },
  announcementRetainedBytesPerUser: {
    schema: limit(
      `bytes of contracts (as JSON, identical ones once) retained for one broker user's announcements; more are refused (default ${DEFAULT_RETAINED_BYTES_PER_USER})`,
      1024 * 1024 * 1024,
    ),
    doc: {
      default: '`1048576`',
      allowed: '1–1073741824',
      meaning:
        "bytes of contracts (as JSON; identical contracts of several instances once) the gateway keeps for one broker user's announcements (one service's, when broker users are not required), and as much again waiting to be applied; an announcement that would take the user over it is refused and logged ([operations.md](operations.md#memory-budget-of-announcements))",
    },
  },
  announcementRetainedBytesTotal: {
    schema: limit(
      `bytes of contracts retained for all announcements together; more are refused (default ${DEFAULT_RETAINED_BYTES_TOTAL})`,
      1024 * 1024 * 1024,
    ),
    doc: {
      default: '`8388608`',
      allowed: '1–1073741824',
      meaning: 'the same, for all announcements together',
    },
  },
  metricsPort: {
    env: 'METRICS_PORT',
    schema: {
      type: 'integer',
      minimum: 1,
      maximum: 65535,
      description:
        'serve Prometheus GET /metrics on this port, apart from the API (env METRICS_PORT); unset: no metrics',
    },
    doc: {
      default: 'unset: no metrics',
      allowed: '1–65535',
      meaning:
        "serve Prometheus `GET /metrics` on this port, a listener of its own apart from the API's ([operations.md](operations.md#metrics-traces-and-logs)); unset, nothing is counted",
    },
  },
  metricsHost: {
    env: 'METRICS_HOST',
    schema: {
      type: 'string',
      minLength: 1,
      description: 'address the metrics port binds to (env METRICS_HOST), default 0.0.0.0',
    },
    doc: {
      default: '`0.0.0.0`',
      allowed: 'an address',
      meaning: 'the address the metrics port binds to; `127.0.0.1` keeps it to the host itself',
    },
  },
  metricsNaming: {
    env: 'METRICS_NAMING',
    schema: {
      type: 'string',
      enum: METRICS_NAMINGS,
      description:
        "prometheus (default): contracts_gateway_http_request_duration_seconds{route,method,status}; otel: OpenTelemetry's http_server_request_duration_seconds{http_route,http_request_method,http_response_status_code} (env METRICS_NAMING)",
    },
    doc: {
      default: '`prometheus`',
      allowed: '`prometheus`, `otel`',
      meaning:
        "the names of the request-duration histogram: `prometheus`, `contracts_gateway_http_request_duration_seconds` labelled `route`, `method`, `status`; `otel`, OpenTelemetry's HTTP semantic conventions as Prometheus names them, `http_server_request_duration_seconds` labelled `http_route`, `http_request_method`, `http_response_status_code`. The other series keep their names; the dashboard reads either ([operations.md](operations.md#metrics-traces-and-logs))",
    },
  },
  accessLog: {
    env: 'ACCESS_LOG',
    schema: { type: 'boolean', description: 'one log line per answered request (env ACCESS_LOG), default true' },
    doc: {
      default: '`true`',
      allowed: 'boolean',
      meaning:
        'one log line per answered request: method, route template, status, duration, correlation and request ids',
    },
  },
  logFormat: {
    env: 'LOG_FORMAT',
    schema: {
      type: 'string',
      enum: LOG_FORMATS,
      description:
        "text (default); json: one JSON object per line in pino's shape; ecs: in Elastic Common Schema (env LOG_FORMAT)",
    },
    doc: {
      default: '`text`',
      allowed: '`text`, `json`, `ecs`',
      meaning:
        "`json`: the plugin's, the host's and the access log's lines as one JSON object per line in pino's shape; `ecs`: in Elastic Common Schema ([operations.md](operations.md#logs))",
    },
  },
  package: {
    schema: { type: 'string' },
    doc: {
      default: '',
      allowed: '',
      meaning: "the host's own: which npm package holds the plugin",
    },
  },
} as const satisfies Record<string, SettingDeclaration>;

export type SettingKey = keyof typeof SETTING_DECLARATIONS;

/** Setting → the environment variable that stands in for it (only those that have one). */
export const SETTING_ENV: Readonly<Record<string, string>> = Object.fromEntries(
  Object.entries(SETTING_DECLARATIONS as Record<string, SettingDeclaration>).flatMap(([key, d]) =>
    d.env ? [[key, d.env]] : [],
  ),
);

/**
 * announcementUsers by environment: `service=user` pairs, a text form of the object the schema describes, so it is
 * parsed (bus-trust.ts) rather than checked against the schema like the variables of SETTING_ENV.
 */
export const ANNOUNCEMENT_USERS_ENV = 'ANNOUNCEMENT_USERS';

/** The environment variable of a setting that has one. */
export function envOf(key: SettingKey): string {
  const name = SETTING_ENV[key];
  if (name === undefined) throw new Error(`setting ${key} has no environment variable`);
  return name;
}

/** The value of a setting's environment variable, when it has one. */
export function envValue(env: NodeJS.ProcessEnv, key: SettingKey): string | undefined {
  const name = SETTING_ENV[key];
  return name === undefined ? undefined : env[name];
}

/** What a setting is given: the block's value, else its environment variable's (undefined: neither). */
export function givenValue(raw: Record<string, unknown>, env: NodeJS.ProcessEnv, key: SettingKey): unknown {
  return raw[key] ?? envValue(env, key);
}
