import { PgIdempotencyStore, serve, type RunningService } from '../../sdk';
import type { Transport } from '../../plugin/bus/transport';
import type { UserStore } from '../users-service/store';
import type { Database } from '../storage/database';
import { authenticate, authenticateExternalUser, externalLogin, logout, refreshToken, revokeToken } from './contracts';
import { authHandlers } from './handlers';
import { TokenSigner } from './tokens';
import { RefreshStore } from './refresh-store';
import { LoginThrottle, type ThrottleLimits } from './login-throttle';
import { ExternalVerifier, providersFromEnv } from './external-providers';
import { lifetimesFromEnv } from './lifetimes';
import { boundedConcurrency, passwordCheckBoundFromEnv } from './password-checks';

export const SERVICE = 'auth-service';

/**
 * Starts the reference auth service. It issues and refreshes tokens signed with JWT_SECRET (the gateway only
 * verifies them) and reads accounts from the users service's tables; refresh tokens and login attempts are in the
 * same database (examples/storage), so every instance sees the same.
 */
export async function startAuthService(
  transport: Transport,
  opts: { db: Database; store: UserStore; env?: NodeJS.ProcessEnv; throttle?: ThrottleLimits },
): Promise<RunningService> {
  const env = opts.env ?? process.env;
  if (!env.JWT_SECRET) throw new Error('JWT_SECRET must be set for the auth service');
  const signer = new TokenSigner({
    secret: env.JWT_SECRET,
    issuer: env.JWT_ISSUER || undefined,
    audience: env.JWT_AUDIENCE || undefined,
    lifetimes: lifetimesFromEnv(env),
  });
  const passwordChecks = passwordCheckBoundFromEnv(env);
  const h = authHandlers({
    store: opts.store,
    signer,
    refreshTokens: new RefreshStore(opts.db),
    throttle: new LoginThrottle(opts.db, opts.throttle),
    external: new ExternalVerifier(providersFromEnv(env)),
  });
  return serve({
    transport,
    service: SERVICE,
    // Idempotency-Key on revoke and logout, the keys beside the accounts (migration 2) and shared by every
    // instance. Answers with tokens are never stored: a repeat of the key would hand them out again.
    idempotency: { store: new PgIdempotencyStore(opts.store.db) },
    operations: [
      // The one operation that checks a password: bounded, so a flood of logins cannot make the owner's wait.
      { contract: authenticate, handle: boundedConcurrency(passwordChecks, h.authenticate), secretAnswers: true },
      { contract: refreshToken, handle: h.refresh, secretAnswers: true },
      { contract: revokeToken, handle: h.revoke },
      { contract: logout, handle: h.logout },
      { contract: externalLogin, handle: h.externalLogin, secretAnswers: true },
      { contract: authenticateExternalUser, handle: h.authenticateExternalUser, secretAnswers: true },
    ],
    onError: (err) => console.error(`[${SERVICE}] handler failed: ${err instanceof Error ? err.message : String(err)}`),
  });
}
