import bcrypt from 'bcryptjs';
import { ServiceError, type HandlerContext } from '../../sdk';
import type { UserRecord, UserStore } from '../users-service/store';
import { subjectOf } from '../users-service/permissions';
import type { TokenSigner } from './tokens';
import type { RefreshStore } from './refresh-store';
import type { LoginThrottle } from './login-throttle';
import { PROVIDERS, type ExternalVerifier, type ProviderName } from './external-providers';

type Input = Record<string, unknown>;

export interface AuthDeps {
  store: UserStore;
  signer: TokenSigner;
  refreshTokens: RefreshStore;
  throttle: LoginThrottle;
  external: ExternalVerifier;
}

/** A hash to compare against when the account does not exist, so both failures take the same time. */
const DUMMY_HASH = bcrypt.hashSync('not-a-password', 10);

const invalidCredentials = () => new ServiceError('INVALID_CREDENTIALS', 'Invalid email or password');
const invalidToken = () => new ServiceError('INVALID_TOKEN', 'The token is invalid, expired or revoked');

function isAdmin(ctx: HandlerContext): boolean {
  return ctx.user?.permissions.includes('admin:all') ?? false;
}

export function authHandlers(deps: AuthDeps) {
  const { store, signer, refreshTokens, throttle } = deps;

  /** The authentication result, with a fresh access and refresh token. */
  async function issue(user: UserRecord) {
    const subject = subjectOf(user);
    const accessToken = await signer.accessToken(subject);
    const refresh = await signer.refreshToken(user.userId);
    refreshTokens.add(refresh.jti, user.userId, refresh.exp);
    return {
      success: true,
      accessToken,
      refreshToken: refresh.token,
      expiresIn: signer.accessSeconds,
      tokenType: 'Bearer',
      user: { id: user.userId, userId: user.userId, email: user.email, name: subject.name, permissions: subject.permissions, roles: subject.roles },
    };
  }

  function linkOrCreate(provider: string, externalUserId: string, email: string | undefined, name: string | undefined): UserRecord {
    const linked = store.findByExternal(provider, externalUserId);
    if (linked) return linked;
    if (!email) throw new ServiceError('VALIDATION_ERROR', 'The identity carries no email', { details: { email: 'is required' } });
    const existing = store.findByEmail(email);
    if (existing) return store.update(existing.userId, { external: { ...existing.external, [provider]: externalUserId } })!;
    return store.insert({ email, name, role: 'user', permissions: [], external: { [provider]: externalUserId } });
  }

  return {
    async authenticate(input: Input) {
      const email = String(input.email ?? '').toLowerCase();
      const wait = throttle.retryAfter(email);
      if (wait > 0) {
        throw new ServiceError('RATE_LIMIT_EXCEEDED', 'Too many failed logins for this account; try again later', { retryAfter: wait });
      }
      const user = store.findByEmail(email);
      const ok = await bcrypt.compare(String(input.password ?? ''), user?.passwordHash ?? DUMMY_HASH);
      if (!user || !user.passwordHash || !ok) {
        throttle.failed(email);
        throw invalidCredentials();
      }
      throttle.succeeded(email);
      return issue(user);
    },

    /** A new access token from the user's current permissions and roles; the refresh token stays the same. */
    async refresh(input: Input) {
      const claims = await signer.verifyRefresh(String(input.refreshToken ?? ''));
      if (!claims || !refreshTokens.isActive(claims.jti)) throw invalidToken();
      const user = store.get(claims.sub);
      if (!user) throw invalidToken();
      return { success: true, accessToken: await signer.accessToken(subjectOf(user)), expiresIn: signer.accessSeconds, tokenType: 'Bearer' };
    },

    /** Revokes one refresh token of the caller (any user's for an administrator). An unknown token revokes nothing. */
    async revoke(input: Input, ctx: HandlerContext) {
      const claims = await signer.verifyRefresh(String(input.token ?? ''));
      if (!claims) return { success: true, revoked: false };
      if (claims.sub !== ctx.user?.userId && !isAdmin(ctx)) {
        throw new ServiceError('ACCESS_DENIED', 'This token belongs to another user');
      }
      return { success: true, revoked: refreshTokens.revoke(claims.jti, 'revoked') };
    },

    /** Revokes every refresh token of the user; access tokens cannot be revoked and run out by themselves. */
    logout(input: Input, ctx: HandlerContext) {
      const userId = typeof input.userId === 'string' ? input.userId : ctx.user?.userId;
      if (!userId) throw new ServiceError('UNAUTHORIZED', 'Authentication required');
      if (userId !== ctx.user?.userId && !isAdmin(ctx)) throw new ServiceError('ACCESS_DENIED', 'You can only log yourself out');
      return { success: true, revokedTokens: refreshTokens.revokeAllOf(userId, 'logout') };
    },

    async externalLogin(input: Input) {
      const provider = String(input.provider) as ProviderName;
      if (!PROVIDERS.includes(provider)) throw new ServiceError('INVALID_FORMAT', 'Unknown provider', { details: { provider: `must be one of ${PROVIDERS.join(', ')}` } });
      const outcome = await deps.external.verify(provider, String(input.idToken ?? ''));
      if (!outcome.ok) {
        if (outcome.reason === 'not-configured') {
          throw new ServiceError('VALIDATION_ERROR', `Login with ${provider} is not configured`, { details: { provider: 'is not configured' } });
        }
        if (outcome.reason === 'unavailable') throw new ServiceError('SERVICE_UNAVAILABLE', `${provider} could not be reached`, { status: 503, retryAfter: 5 });
        throw new ServiceError('INVALID_CREDENTIALS', `The ${provider} id token is not valid`);
      }
      const { identity } = outcome;
      return issue(linkOrCreate(provider, identity.externalUserId, identity.email, identity.name));
    },

    async authenticateExternalUser(input: Input) {
      const user = linkOrCreate(String(input.externalProvider), String(input.externalUserId), String(input.email), typeof input.name === 'string' ? input.name : undefined);
      return issue(user);
    },
  };
}
