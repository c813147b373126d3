import type { Request } from 'express';
import type { AuthenticatedUser } from './claims';
import { developmentUser } from './dev-auth';
import type { TokenVerifier } from './verify-token';

/**
 * The caller of a request: in development mode the X-Dev-* headers when X-Dev-User-Id is there (no token is
 * looked at), otherwise the Bearer token; at once unless a token has to be verified. Throws (or rejects with) the
 * GatewayErrors of TokenVerifier.
 */
export function authenticateRequest(
  req: Request,
  verifier: TokenVerifier,
  developmentAuthEnabled: boolean,
): AuthenticatedUser | Promise<AuthenticatedUser> {
  if (developmentAuthEnabled) {
    const dev = developmentUser(req.headers);
    if (dev) return dev;
  }
  return verifier.authenticate(req.headers.authorization);
}

/**
 * The caller when no token has to be verified (development headers, or a token verified before); undefined when one
 * has (authenticateRequest). Throws the GatewayError of a missing or malformed token.
 */
export function knownCaller(
  req: Request,
  verifier: TokenVerifier,
  developmentAuthEnabled: boolean,
): AuthenticatedUser | undefined {
  if (developmentAuthEnabled) {
    const dev = developmentUser(req.headers);
    if (dev) return dev;
  }
  return verifier.knownUser(req.headers.authorization);
}
