import { envValue, givenValue } from './declarations';
import {
  DEFAULT_HEADERS_TIMEOUT_MS,
  DEFAULT_PUBLIC_RATE_LIMIT_MAX,
  DEFAULT_RATE_WINDOW_MS,
  DEFAULT_REQUEST_RECEIVE_TIMEOUT_MS,
  DEFAULT_STORE_TIMEOUT_MS,
  PUBLIC_RATE_LIMIT_OFF,
  type StoreFailureMode,
} from './defaults';

/**
 * The settings of the edge (CORS, rate limits, and how long and how many connections the API server holds), part of the plugin settings (plugin/settings/index.ts):
 * the `plugins.contracts` block of system.config.yml, environment variables for what it leaves out.
 */
export interface EdgeSettings {
  /** `*`, or the origins allowed to call (Access-Control-Allow-Origin). */
  corsOrigins: '*' | string[];
  /** Access-Control-Allow-Credentials: true. With `*` origins the request's Origin is reflected (browsers refuse `*` with credentials). */
  corsCredentials: boolean;
  /** PATCH among the allowed methods (off by default). */
  corsAllowPatch: boolean;
  /** Gateway-wide requests per caller per window; undefined: no limit unless a contract sets its own. */
  rateLimitMax?: number;
  rateLimitWindowMs: number;
  /** Requests per client address per window to public contracts; undefined only when set to `off`. */
  publicRateLimitMax?: number;
  publicRateLimitWindowMs: number;
  /** Namespace of the counters in the store (`rl:<prefix>:…` in Redis), so deployments sharing a Redis stay apart. */
  rateLimitPrefix: string;
  /** When the counter store fails or does not answer in time: `open` lets rate-limited requests through, `closed` answers them 503. */
  rateLimitOnStoreFailure: StoreFailureMode;
  /** How long a request waits for the counter store before the store counts as failed. */
  rateLimitStoreTimeoutMs: number;
  /** The request line and headers must arrive within this (the host's server.headersTimeout); else 408. */
  headersTimeoutMs: number;
  /** The whole request, headers and body, must arrive within this (server.requestTimeout); else 408, connection closed. */
  requestReceiveTimeoutMs: number;
  /** Open connections the API's server keeps at most (server.maxConnections); undefined: no cap. */
  maxConnections?: number;
}

function positiveInt(v: unknown): number | undefined {
  const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
  return Number.isInteger(n) && n > 0 ? n : undefined;
}

/** On unless named `off`: a missing or unreadable value keeps the default (the start refuses an unreadable one). */
function publicLimit(v: unknown): number | undefined {
  if (typeof v === 'string' && v.trim() === PUBLIC_RATE_LIMIT_OFF) return undefined;
  return positiveInt(v) ?? DEFAULT_PUBLIC_RATE_LIMIT_MAX;
}

/** A window of at least a second, else the default. */
function windowMs(v: unknown): number {
  const window = positiveInt(v);
  return window !== undefined && window >= 1000 ? window : DEFAULT_RATE_WINDOW_MS;
}

function flag(raw: unknown, env: string | undefined): boolean {
  return typeof raw === 'boolean' ? raw : env === 'true';
}

function origins(raw: unknown, env: string | undefined): '*' | string[] {
  const given = raw ?? env;
  const list = (Array.isArray(given) ? given : typeof given === 'string' ? given.split(',') : [])
    .filter((o): o is string => typeof o === 'string')
    .map((o) => o.trim())
    .filter((o) => o !== '');
  return list.length === 0 || list.includes('*') ? '*' : [...new Set(list)];
}

export function resolveEdgeSettings(
  raw: Record<string, unknown> = {},
  env: NodeJS.ProcessEnv = process.env,
): EdgeSettings {
  const prefix = givenValue(raw, env, 'rateLimitPrefix');
  const storeTimeout = positiveInt(givenValue(raw, env, 'rateLimitStoreTimeoutMs'));
  const maxConnections = positiveInt(givenValue(raw, env, 'maxConnections'));
  const receive = positiveInt(givenValue(raw, env, 'requestReceiveTimeoutMs')) ?? DEFAULT_REQUEST_RECEIVE_TIMEOUT_MS;
  return {
    corsOrigins: origins(raw.corsOrigins, envValue(env, 'corsOrigins')),
    corsCredentials: flag(raw.corsCredentials, envValue(env, 'corsCredentials')),
    corsAllowPatch: flag(raw.corsAllowPatch, envValue(env, 'corsAllowPatch')),
    rateLimitMax: positiveInt(givenValue(raw, env, 'rateLimitMax')),
    rateLimitWindowMs: windowMs(givenValue(raw, env, 'rateLimitWindowMs')),
    publicRateLimitMax: publicLimit(givenValue(raw, env, 'publicRateLimitMax')),
    publicRateLimitWindowMs: windowMs(givenValue(raw, env, 'publicRateLimitWindowMs')),
    rateLimitPrefix: typeof prefix === 'string' && /^[A-Za-z0-9_.-]{1,64}$/.test(prefix) ? prefix : 'contracts',
    // The start refuses a misspelt mode (settings/validation.ts); only an absent one means open.
    rateLimitOnStoreFailure:
      String(givenValue(raw, env, 'rateLimitOnStoreFailure') ?? 'open').trim() === 'closed' ? 'closed' : 'open',
    rateLimitStoreTimeoutMs: storeTimeout ?? DEFAULT_STORE_TIMEOUT_MS,
    // Unset, the headers' timeout is never longer than the request's (Node's rule; validation.ts refuses it when set).
    headersTimeoutMs:
      positiveInt(givenValue(raw, env, 'headersTimeoutMs')) ?? Math.min(DEFAULT_HEADERS_TIMEOUT_MS, receive),
    requestReceiveTimeoutMs: receive,
    ...(maxConnections !== undefined ? { maxConnections } : {}),
  };
}
