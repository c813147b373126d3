import type { Request } from 'express';
import type { AuthenticatedUser } from './claims';
import { developmentUser } from './dev-auth';
import type { TokenVerifier } from './verify-token';

/**
 * The caller of a request: in development mode the X-Dev-* headers when X-Dev-User-Id is there (no token is
 * looked at), otherwise the Bearer token. Throws the GatewayErrors of TokenVerifier.
 */
export async function authenticateRequest(req: Request, verifier: TokenVerifier, developmentAuthEnabled: boolean): Promise<AuthenticatedUser> {
  if (developmentAuthEnabled) {
    const dev = developmentUser(req.headers);
    if (dev) return dev;
  }
  return verifier.authenticate(req.headers.authorization);
}
