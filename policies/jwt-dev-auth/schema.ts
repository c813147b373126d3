import { ROUTE_ACTION_SCHEMA_PROPERTIES } from '../../plugin/routing/route-action';

/**
 * Action of a jwt-dev-auth step. The route fields come with generated pipelines; the rest override the
 * environment (JWT_SECRET, JWKS_URI, JWT_ISSUER, JWT_AUDIENCE, JWT_CLOCK_TOLERANCE, DEVELOPMENT_AUTH_ENABLED).
 * Prefer the environment for the secret. No additionalProperties: false — the host adds its own properties.
 */
export const schema = {
  $id: 'http://express-gateway.io/schemas/policies/jwt-dev-auth.json',
  type: 'object',
  properties: {
    ...ROUTE_ACTION_SCHEMA_PROPERTIES,
    public: { type: 'boolean', description: 'hand-written pipelines: no authentication needed (a valid token still sets the user)' },
    jwtSecret: { type: 'string', minLength: 32, description: 'HS256 shared secret (env JWT_SECRET), at least 32 characters' },
    jwksUri: { type: 'string', description: 'RS256 key-set address (env JWKS_URI)' },
    issuer: { type: 'string', description: 'expected iss of RS256 tokens (env JWT_ISSUER)' },
    audience: { type: 'string', description: 'expected aud of RS256 tokens (env JWT_AUDIENCE)' },
    clockTolerance: { type: 'number', minimum: 0, description: 'clock skew tolerance in seconds (env JWT_CLOCK_TOLERANCE)' },
    developmentAuthEnabled: { type: 'boolean', description: 'development mode (env DEVELOPMENT_AUTH_ENABLED=true); never in production' },
    jwksCooldownMs: { type: 'integer', minimum: 0, description: 'least time between key-set fetches (unknown kid); default 30000' },
    jwksFailureBackoffMs: { type: 'integer', minimum: 0, description: 'least time between key-set fetches after a failure; default 5000' },
    jwksTimeoutMs: { type: 'integer', minimum: 1, description: 'bound on one key-set fetch; default 5000' },
    jwksMaxAgeMs: { type: 'integer', minimum: 1, description: 'key set refreshed after this long; default 600000' },
    tokenCacheMax: { type: 'integer', minimum: 0, description: 'verified tokens kept; default 10000, 0 disables' },
    tokenCacheMaxTtlMs: { type: 'integer', minimum: 1, description: 'longest a verified token is kept; default 300000' },
    maxTokenBytes: { type: 'integer', minimum: 1, description: 'longer tokens are refused; default 8192' },
  },
};
