import { InvalidSettingError } from './invalid-setting';

/**
 * Configuration of token verification and development mode. Environment variables (JWT_SECRET, JWKS_URI, …) are the
 * base; the action parameters of a jwt-dev-auth policy step may override each of them.
 * Read once per policy creation, never per request.
 */
export interface AuthConfig {
  /** HS256 shared secret (JWT_SECRET); at least 32 characters. Absent: HS256 tokens are refused. */
  jwtSecret?: string;
  /** RS256 key-set address (JWKS_URI). Absent: RS256 tokens are refused. */
  jwksUri?: string;
  /** Expected `iss` of RS256 tokens (JWT_ISSUER). */
  issuer?: string;
  /** Expected `aud` of RS256 tokens (JWT_AUDIENCE). */
  audience?: string;
  /** Clock skew tolerance, seconds (JWT_CLOCK_TOLERANCE). */
  clockToleranceSeconds: number;
  /** DEVELOPMENT_AUTH_ENABLED is exactly `true`. */
  developmentAuthEnabled: boolean;
  /** Least time between two fetches of the key set after a successful one (an unknown kid waits this long). */
  jwksCooldownMs: number;
  /** Least time between two fetches after a failed one. */
  jwksFailureBackoffMs: number;
  /** Bound on one key-set fetch. */
  jwksTimeoutMs: number;
  /** A fetched key set is refreshed after this long. */
  jwksMaxAgeMs: number;
  /** Verified tokens kept (LRU). 0 disables the cache. */
  tokenCacheMax: number;
  /** A cached verification lives at most this long (and never past the token's exp). */
  tokenCacheMaxTtlMs: number;
  /** Longer tokens are refused without being parsed. */
  maxTokenBytes: number;
}

/** What a jwt-dev-auth action may set (see policies/jwt-dev-auth/schema.ts). */
export interface AuthOverrides {
  jwtSecret?: string;
  jwksUri?: string;
  issuer?: string;
  audience?: string;
  clockTolerance?: number;
  developmentAuthEnabled?: boolean;
  jwksCooldownMs?: number;
  jwksFailureBackoffMs?: number;
  jwksTimeoutMs?: number;
  jwksMaxAgeMs?: number;
  tokenCacheMax?: number;
  tokenCacheMaxTtlMs?: number;
  maxTokenBytes?: number;
}

/**
 * The jwt-dev-auth action parameters that override the authentication settings, declared once: the environment
 * variable each stands in for (none: set per action only) and its schema in the policy's action.
 */
export const AUTH_OVERRIDE_DECLARATIONS = {
  jwtSecret: { env: 'JWT_SECRET', schema: { type: 'string', minLength: 32, description: 'HS256 shared secret (env JWT_SECRET), at least 32 characters' } },
  jwksUri: { env: 'JWKS_URI', schema: { type: 'string', description: 'RS256 key-set address (env JWKS_URI)' } },
  issuer: { env: 'JWT_ISSUER', schema: { type: 'string', description: 'expected iss of RS256 tokens (env JWT_ISSUER)' } },
  audience: { env: 'JWT_AUDIENCE', schema: { type: 'string', description: 'expected aud of RS256 tokens (env JWT_AUDIENCE)' } },
  clockTolerance: { env: 'JWT_CLOCK_TOLERANCE', schema: { type: 'number', minimum: 0, description: 'clock skew tolerance in seconds (env JWT_CLOCK_TOLERANCE)' } },
  developmentAuthEnabled: { env: 'DEVELOPMENT_AUTH_ENABLED', schema: { type: 'boolean', description: 'development mode (env DEVELOPMENT_AUTH_ENABLED=true); never in production' } },
  jwksCooldownMs: { schema: { type: 'integer', minimum: 0, description: 'least time between key-set fetches (unknown kid); default 30000' } },
  jwksFailureBackoffMs: { schema: { type: 'integer', minimum: 0, description: 'least time between key-set fetches after a failure; default 5000' } },
  jwksTimeoutMs: { schema: { type: 'integer', minimum: 1, description: 'bound on one key-set fetch; default 5000' } },
  jwksMaxAgeMs: { schema: { type: 'integer', minimum: 1, description: 'key set refreshed after this long; default 600000' } },
  tokenCacheMax: { schema: { type: 'integer', minimum: 0, description: 'verified tokens kept; default 10000, 0 disables' } },
  tokenCacheMaxTtlMs: { schema: { type: 'integer', minimum: 1, description: 'longest a verified token is kept; default 300000' } },
  maxTokenBytes: { schema: { type: 'integer', minimum: 1, description: 'longer tokens are refused; default 8192' } },
} as const satisfies Record<keyof AuthOverrides, { env?: string; schema: Record<string, unknown> }>;

export const AUTH_OVERRIDE_KEYS = Object.keys(AUTH_OVERRIDE_DECLARATIONS) as ReadonlyArray<keyof AuthOverrides>;

/** The action properties of the overrides, for the jwt-dev-auth policy's schema. */
export const AUTH_OVERRIDE_SCHEMA_PROPERTIES = Object.fromEntries(Object.entries(AUTH_OVERRIDE_DECLARATIONS).map(([key, d]) => [key, d.schema]));

const ENV = {
  jwtSecret: AUTH_OVERRIDE_DECLARATIONS.jwtSecret.env,
  jwksUri: AUTH_OVERRIDE_DECLARATIONS.jwksUri.env,
  issuer: AUTH_OVERRIDE_DECLARATIONS.issuer.env,
  audience: AUTH_OVERRIDE_DECLARATIONS.audience.env,
  clockTolerance: AUTH_OVERRIDE_DECLARATIONS.clockTolerance.env,
  developmentAuthEnabled: AUTH_OVERRIDE_DECLARATIONS.developmentAuthEnabled.env,
};

const MIN_SECRET_LENGTH = 32;

const AUTH_DEFAULTS = Object.freeze({
  clockToleranceSeconds: 0,
  jwksCooldownMs: 30_000,
  jwksFailureBackoffMs: 5_000,
  jwksTimeoutMs: 5_000,
  jwksMaxAgeMs: 10 * 60_000,
  tokenCacheMax: 10_000,
  tokenCacheMaxTtlMs: 5 * 60_000,
  maxTokenBytes: 8 * 1024,
});

/** Builds the configuration; throws an InvalidSettingError naming the setting when a value is unusable (fail closed at start). */
export function resolveAuthConfig(overrides: AuthOverrides = {}, env: NodeJS.ProcessEnv = process.env): AuthConfig {
  const jwtSecret = pick(overrides.jwtSecret, env[ENV.jwtSecret]);
  if (jwtSecret !== undefined && jwtSecret.length < MIN_SECRET_LENGTH) {
    throw new InvalidSettingError(ENV.jwtSecret, `must be at least ${MIN_SECRET_LENGTH} characters long (it has ${jwtSecret.length})`);
  }
  const jwksUri = pick(overrides.jwksUri, env[ENV.jwksUri]);
  if (jwksUri !== undefined) checkUrl(jwksUri);
  return {
    jwtSecret,
    jwksUri,
    issuer: pick(overrides.issuer, env[ENV.issuer]),
    audience: pick(overrides.audience, env[ENV.audience]),
    clockToleranceSeconds: nonNegative(ENV.clockTolerance, overrides.clockTolerance ?? env[ENV.clockTolerance], AUTH_DEFAULTS.clockToleranceSeconds),
    developmentAuthEnabled: overrides.developmentAuthEnabled ?? isDevelopmentAuthEnv(env),
    jwksCooldownMs: nonNegative('jwksCooldownMs', overrides.jwksCooldownMs, AUTH_DEFAULTS.jwksCooldownMs),
    jwksFailureBackoffMs: nonNegative('jwksFailureBackoffMs', overrides.jwksFailureBackoffMs, AUTH_DEFAULTS.jwksFailureBackoffMs),
    jwksTimeoutMs: positive('jwksTimeoutMs', overrides.jwksTimeoutMs, AUTH_DEFAULTS.jwksTimeoutMs),
    jwksMaxAgeMs: positive('jwksMaxAgeMs', overrides.jwksMaxAgeMs, AUTH_DEFAULTS.jwksMaxAgeMs),
    tokenCacheMax: nonNegative('tokenCacheMax', overrides.tokenCacheMax, AUTH_DEFAULTS.tokenCacheMax),
    tokenCacheMaxTtlMs: positive('tokenCacheMaxTtlMs', overrides.tokenCacheMaxTtlMs, AUTH_DEFAULTS.tokenCacheMaxTtlMs),
    maxTokenBytes: positive('maxTokenBytes', overrides.maxTokenBytes, AUTH_DEFAULTS.maxTokenBytes),
  };
}

/**
 * Start-up check of the environment: throws a clear Error when JWT_SECRET is set and shorter than 32 characters,
 * when JWKS_URI is not an http(s) URL or JWT_CLOCK_TOLERANCE is not a non-negative number.
 */
export function checkAuthConfig(env: NodeJS.ProcessEnv = process.env): void {
  resolveAuthConfig({}, env);
}

/** Development mode is on only when the variable is exactly `true` (not TRUE, 1 or yes). */
export function isDevelopmentAuthEnv(env: NodeJS.ProcessEnv = process.env): boolean {
  return env[ENV.developmentAuthEnabled] === 'true';
}

/** An override wins over the environment; empty strings count as unset. */
function pick(override: string | undefined, fromEnv: string | undefined): string | undefined {
  const v = override ?? fromEnv;
  return typeof v === 'string' && v !== '' ? v : undefined;
}

function checkUrl(uri: string): void {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    throw new InvalidSettingError(ENV.jwksUri, `is not a valid URL: ${uri}`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new InvalidSettingError(ENV.jwksUri, 'must be an http:// or https:// URL');
}

function nonNegative(name: string, v: unknown, fallback: number): number {
  if (v === undefined || v === '') return fallback;
  const n = typeof v === 'number' ? v : typeof v === 'string' ? Number(v.trim()) : NaN;
  if (!Number.isFinite(n) || n < 0) throw new InvalidSettingError(name, `must be a non-negative number (got ${String(v)})`);
  return n;
}

function positive(name: string, v: unknown, fallback: number): number {
  const n = nonNegative(name, v, fallback);
  if (n === 0) throw new InvalidSettingError(name, 'must be greater than 0');
  return n;
}
