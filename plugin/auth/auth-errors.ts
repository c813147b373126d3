import { GatewayError, serviceUnavailable } from '../errors/gateway-error';

/**
 * The 401s of authentication. Every one carries WWW-Authenticate (RFC 6750 §3): a plain `Bearer` challenge when
 * the request had no credentials, `Bearer error="invalid_token"` when the token it had was refused.
 * Messages are fixed texts: which check failed is logged nowhere client-visible.
 */
const CHALLENGE = 'Bearer';
const INVALID_CHALLENGE = 'Bearer error="invalid_token"';

export function noAuthHeader(): GatewayError {
  return new GatewayError('NO_AUTH_HEADER', 'Authorization header is missing', {
    headers: { 'WWW-Authenticate': CHALLENGE },
  });
}

export function invalidToken(message = 'The access token is invalid'): GatewayError {
  return new GatewayError('INVALID_TOKEN', message, { headers: { 'WWW-Authenticate': INVALID_CHALLENGE } });
}

export function tokenExpired(): GatewayError {
  return new GatewayError('TOKEN_EXPIRED', 'The access token has expired', {
    headers: { 'WWW-Authenticate': INVALID_CHALLENGE },
  });
}

/** The permission step found no authenticated caller on a route that needs one. */
export function unauthorized(): GatewayError {
  return new GatewayError('UNAUTHORIZED', 'Authentication is required', { headers: { 'WWW-Authenticate': CHALLENGE } });
}

export function insufficientPermissions(requiredPermission: string): GatewayError {
  return new GatewayError('INSUFFICIENT_PERMISSIONS', `Missing required permission: ${requiredPermission}`, {
    extra: { requiredPermission },
  });
}

/** The key set could not be loaded: the token may be fine, the gateway cannot tell (503, Retry-After). */
export function keySetUnavailable(retryAfterSeconds: number): GatewayError {
  return serviceUnavailable('The token signing keys are temporarily unavailable', retryAfterSeconds);
}
