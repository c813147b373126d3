import { InvalidSettingError } from './invalid-setting';

/**
 * Configuration of token verification and development mode. Environment variables (JWT_SECRET, JWKS_URI, …) are the
 * base, resolved once with the other settings (`Settings.auth`, plugin/settings/index.ts) and held by the runtime;
 * the action parameters of a jwt-dev-auth policy step may override each of them (withAuthOverrides, when the policy
 * is created). Never read per request.
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
  jwtSecret: {
    env: 'JWT_SECRET',
    schema: {
      type: 'string',
      minLength: 32,
      description: 'HS256 shared secret (env JWT_SECRET), at least 32 characters',
    },
  },
  jwksUri: { env: 'JWKS_URI', schema: { type: 'string', description: 'RS256 key-set address (env JWKS_URI)' } },
  issuer: {
    env: 'JWT_ISSUER',
    schema: { type: 'string', description: 'expected iss of RS256 tokens (env JWT_ISSUER)' },
  },
  audience: {
    env: 'JWT_AUDIENCE',
    schema: { type: 'string', description: 'expected aud of RS256 tokens (env JWT_AUDIENCE)' },
  },
  clockTolerance: {
    env: 'JWT_CLOCK_TOLERANCE',
    schema: { type: 'number', minimum: 0, description: 'clock skew tolerance in seconds (env JWT_CLOCK_TOLERANCE)' },
  },
  developmentAuthEnabled: {
    env: 'DEVELOPMENT_AUTH_ENABLED',
    schema: {
      type: 'boolean',
      description: 'development mode (env DEVELOPMENT_AUTH_ENABLED=true); never in production',
    },
  },
  jwksCooldownMs: {
    schema: {
      type: 'integer',
      minimum: 0,
      description: 'least time between key-set fetches (unknown kid); default 30000',
    },
  },
  jwksFailureBackoffMs: {
    schema: {
      type: 'integer',
      minimum: 0,
      description: 'least time between key-set fetches after a failure; default 5000',
    },
  },
  jwksTimeoutMs: { schema: { type: 'integer', minimum: 1, description: 'bound on one key-set fetch; default 5000' } },
  jwksMaxAgeMs: {
    schema: { type: 'integer', minimum: 1, description: 'key set refreshed after this long; default 600000' },
  },
  tokenCacheMax: {
    schema: { type: 'integer', minimum: 0, description: 'verified tokens kept; default 10000, 0 disables' },
  },
  tokenCacheMaxTtlMs: {
    schema: { type: 'integer', minimum: 1, description: 'longest a verified token is kept; default 300000' },
  },
  maxTokenBytes: { schema: { type: 'integer', minimum: 1, description: 'longer tokens are refused; default 8192' } },
} as const satisfies Record<keyof AuthOverrides, { env?: string; schema: Record<string, unknown> }>;

export const AUTH_OVERRIDE_KEYS = Object.keys(AUTH_OVERRIDE_DECLARATIONS) as ReadonlyArray<keyof AuthOverrides>;

/** The action properties of the overrides, for the jwt-dev-auth policy's schema. */
export const AUTH_OVERRIDE_SCHEMA_PROPERTIES = Object.fromEntries(
  Object.entries(AUTH_OVERRIDE_DECLARATIONS).map(([key, d]) => [key, d.schema]),
);

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

/**
 * The configuration of a jwt-dev-auth action: the environment's (authFromEnv), with the action's overrides. Throws an
 * InvalidSettingError naming the setting when a value is unusable (fail closed at start).
 */
export function resolveAuthConfig(overrides: AuthOverrides = {}, env: NodeJS.ProcessEnv = process.env): AuthConfig {
  return withAuthOverrides(authFromEnv(env), overrides);
}

/** The authentication settings of the environment alone: what every step without overrides uses (Settings.auth). */
export function authFromEnv(env: NodeJS.ProcessEnv = process.env): AuthConfig {
  return {
    jwtSecret: checkedSecret(given(env[ENV.jwtSecret])),
    jwksUri: checkedUri(given(env[ENV.jwksUri])),
    issuer: given(env[ENV.issuer]),
    audience: given(env[ENV.audience]),
    clockToleranceSeconds: nonNegative(
      ENV.clockTolerance,
      env[ENV.clockTolerance],
      AUTH_DEFAULTS.clockToleranceSeconds,
    ),
    developmentAuthEnabled: isDevelopmentAuthEnv(env),
    jwksCooldownMs: AUTH_DEFAULTS.jwksCooldownMs,
    jwksFailureBackoffMs: AUTH_DEFAULTS.jwksFailureBackoffMs,
    jwksTimeoutMs: AUTH_DEFAULTS.jwksTimeoutMs,
    jwksMaxAgeMs: AUTH_DEFAULTS.jwksMaxAgeMs,
    tokenCacheMax: AUTH_DEFAULTS.tokenCacheMax,
    tokenCacheMaxTtlMs: AUTH_DEFAULTS.tokenCacheMaxTtlMs,
    maxTokenBytes: AUTH_DEFAULTS.maxTokenBytes,
  };
}

/**
 * `base` (the runtime's settings) with a jwt-dev-auth action's overrides merged onto it; `base` itself when the action
 * overrides nothing. An override wins over the environment (an empty string unsets); throws an InvalidSettingError
 * naming the setting when a value is unusable.
 */
export function withAuthOverrides(base: AuthConfig, overrides: AuthOverrides): AuthConfig {
  if (AUTH_OVERRIDE_KEYS.every((key) => overrides[key] === undefined)) return base;
  const o = overrides;
  /** A tuning override, checked by `check`; the base's value when the action leaves it out. */
  const tuned = (key: keyof typeof AUTH_DEFAULTS & keyof AuthOverrides, check: typeof positive): number =>
    o[key] === undefined ? base[key] : check(key, o[key], AUTH_DEFAULTS[key]);
  return {
    jwtSecret: checkedSecret(given(o.jwtSecret ?? base.jwtSecret)),
    jwksUri: checkedUri(given(o.jwksUri ?? base.jwksUri)),
    issuer: given(o.issuer ?? base.issuer),
    audience: given(o.audience ?? base.audience),
    clockToleranceSeconds:
      o.clockTolerance == null
        ? base.clockToleranceSeconds
        : nonNegative(ENV.clockTolerance, o.clockTolerance, AUTH_DEFAULTS.clockToleranceSeconds),
    developmentAuthEnabled: o.developmentAuthEnabled ?? base.developmentAuthEnabled,
    jwksCooldownMs: tuned('jwksCooldownMs', nonNegative),
    jwksFailureBackoffMs: tuned('jwksFailureBackoffMs', nonNegative),
    jwksTimeoutMs: tuned('jwksTimeoutMs', positive),
    jwksMaxAgeMs: tuned('jwksMaxAgeMs', positive),
    tokenCacheMax: tuned('tokenCacheMax', nonNegative),
    tokenCacheMaxTtlMs: tuned('tokenCacheMaxTtlMs', positive),
    maxTokenBytes: tuned('maxTokenBytes', positive),
  };
}

function checkedSecret(jwtSecret: string | undefined): string | undefined {
  if (jwtSecret !== undefined && jwtSecret.length < MIN_SECRET_LENGTH) {
    throw new InvalidSettingError(
      ENV.jwtSecret,
      `must be at least ${MIN_SECRET_LENGTH} characters long (it has ${jwtSecret.length})`,
    );
  }
  return jwtSecret;
}

function checkedUri(jwksUri: string | undefined): string | undefined {
  if (jwksUri !== undefined) checkUrl(jwksUri);
  return jwksUri;
}

/**
 * Start-up check of the environment: throws a clear Error when JWT_SECRET is set and shorter than 32 characters,
 * when JWKS_URI is not an http(s) URL or JWT_CLOCK_TOLERANCE is not a non-negative number.
 */
export function checkAuthConfig(env: NodeJS.ProcessEnv = process.env): void {
  authFromEnv(env);
}

/** Development mode is on only when the variable is exactly `true` (not TRUE, 1 or yes). */
export function isDevelopmentAuthEnv(env: NodeJS.ProcessEnv = process.env): boolean {
  return env[ENV.developmentAuthEnabled] === 'true';
}

/** Empty strings count as unset. */
function given(v: string | undefined): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

function checkUrl(uri: string): void {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    throw new InvalidSettingError(ENV.jwksUri, `is not a valid URL: ${uri}`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new InvalidSettingError(ENV.jwksUri, 'must be an http:// or https:// URL');
}

function nonNegative(name: string, v: unknown, fallback: number): number {
  if (v === undefined || v === '') return fallback;
  const n = typeof v === 'number' ? v : typeof v === 'string' ? Number(v.trim()) : NaN;
  if (!Number.isFinite(n) || n < 0)
    throw new InvalidSettingError(name, `must be a non-negative number (got ${String(v)})`);
  return n;
}

function positive(name: string, v: unknown, fallback: number): number {
  const n = nonNegative(name, v, fallback);
  if (n === 0) throw new InvalidSettingError(name, 'must be greater than 0');
  return n;
}
