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

export const MIN_SECRET_LENGTH = 32;

export const AUTH_DEFAULTS = Object.freeze({
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
  const jwtSecret = pick(overrides.jwtSecret, env.JWT_SECRET);
  if (jwtSecret !== undefined && jwtSecret.length < MIN_SECRET_LENGTH) {
    throw new InvalidSettingError('JWT_SECRET', `must be at least ${MIN_SECRET_LENGTH} characters long (it has ${jwtSecret.length})`);
  }
  const jwksUri = pick(overrides.jwksUri, env.JWKS_URI);
  if (jwksUri !== undefined) checkUrl(jwksUri);
  return {
    jwtSecret,
    jwksUri,
    issuer: pick(overrides.issuer, env.JWT_ISSUER),
    audience: pick(overrides.audience, env.JWT_AUDIENCE),
    clockToleranceSeconds: nonNegative('JWT_CLOCK_TOLERANCE', overrides.clockTolerance ?? env.JWT_CLOCK_TOLERANCE, AUTH_DEFAULTS.clockToleranceSeconds),
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
  return env.DEVELOPMENT_AUTH_ENABLED === 'true';
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
    throw new InvalidSettingError('JWKS_URI', `is not a valid URL: ${uri}`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new InvalidSettingError('JWKS_URI', 'must be an http:// or https:// URL');
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
