import type { EdgeSettings } from '../settings/edge';

/** Request headers a browser may send cross-origin (the API's own, plus our tracing headers and Idempotency-Key). */
const CORS_ALLOWED_HEADERS = [
  'Authorization',
  'Content-Type',
  'X-Dev-User-Id',
  'X-Dev-Permissions',
  'X-Correlation-Id',
  'traceparent',
  'Idempotency-Key',
];

/**
 * Response headers a browser script may read: the trace ids, Location of a create, the rate limit answers, replays,
 * and a deprecated contract's Deprecation and Sunset (a web client is the one to warn).
 */
export const CORS_EXPOSED_HEADERS = [
  'X-Correlation-Id',
  'X-Request-Id',
  'Location',
  'Retry-After',
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'Idempotent-Replayed',
  'Deprecation',
  'Sunset',
];

const CORS_MAX_AGE_SECONDS = 86400;

/** The action of the host's `cors` policy (express-gateway lib/policies/cors, the `cors` package's options). */
export interface CorsAction {
  origin: '*' | true | string[];
  methods: string[];
  allowedHeaders: string[];
  exposedHeaders: string[];
  credentials: boolean;
  maxAge: number;
  optionsSuccessStatus: number;
  preflightContinue: boolean;
}

const DEFAULTS: Pick<EdgeSettings, 'corsOrigins' | 'corsCredentials' | 'corsAllowPatch'> = {
  corsOrigins: '*',
  corsCredentials: false,
  corsAllowPatch: false,
};

/**
 * The cors step of every generated pipeline, from the plugin settings. Browsers refuse
 * `Access-Control-Allow-Origin: *` on a request with credentials, so with credentials on and `*` origins the
 * request's Origin is reflected (`origin: true`): any site may then send credentialed requests, which is why
 * credentials are off by default and a list of origins is the safer way to turn them on.
 */
export function corsAction(
  settings: Pick<EdgeSettings, 'corsOrigins' | 'corsCredentials' | 'corsAllowPatch'> = DEFAULTS,
): CorsAction {
  // A list: the request's Origin is echoed when listed, and no Allow-Origin is sent otherwise.
  const origin = settings.corsOrigins !== '*' ? [...settings.corsOrigins] : settings.corsCredentials ? true : '*';
  const methods = ['GET', 'POST', 'PUT', 'DELETE', 'OPTIONS'];
  if (settings.corsAllowPatch) methods.splice(4, 0, 'PATCH');
  return {
    origin,
    methods,
    allowedHeaders: [...CORS_ALLOWED_HEADERS],
    exposedHeaders: [...CORS_EXPOSED_HEADERS],
    credentials: settings.corsCredentials,
    maxAge: CORS_MAX_AGE_SECONDS,
    optionsSuccessStatus: 204,
    // The preflight is answered by cors itself, before authentication.
    preflightContinue: false,
  };
}
