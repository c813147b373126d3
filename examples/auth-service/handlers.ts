import bcrypt from 'bcryptjs';
import { requestTimeLeft, ServiceError, type HandlerContext } from '../../sdk';
import { changeWithAnswer } from '../storage/answered';
import { EmailTaken, type UserRecord, type UserStore } from '../users-service/store';
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

/** How long a password check takes in this process, a moving average (it depends on the CPU the process gets). */
let hashMs = 100;

/**
 * Whether the request being handled has time left for a password check and what follows it (always outside a
 * request): twice the usual, as a busy CPU can slow one check down.
 */
function hashFitsDeadline(): boolean {
  const left = requestTimeLeft();
  return left === undefined || left > 2 * hashMs + 100;
}

async function timedHash<T>(hash: () => Promise<T>): Promise<T> {
  const started = Date.now();
  const out = await hash();
  hashMs = 0.8 * hashMs + 0.2 * (Date.now() - started);
  return out;
}

const invalidCredentials = () => new ServiceError('INVALID_CREDENTIALS', 'Invalid email or password');
const invalidToken = () => new ServiceError('INVALID_TOKEN', 'The token is invalid, expired or revoked');

function isAdmin(ctx: HandlerContext): boolean {
  return ctx.user?.permissions.includes('admin:all') ?? false;
}

export function authHandlers(deps: AuthDeps) {
  const { store, signer, refreshTokens, throttle } = deps;

  /**
   * The authentication result, with a fresh access and refresh token: the refresh token's row and the answer that
   * carries it commit together, so a replayed login never hands out a token the database does not know.
   */
  async function issue(user: UserRecord, ctx: HandlerContext | undefined) {
    const subject = subjectOf(user);
    const accessToken = await signer.accessToken(subject);
    const refresh = await signer.refreshToken(user.userId);
    return changeWithAnswer(store.db, ctx, async (tx) => {
      await refreshTokens.add(refresh.jti, user.userId, refresh.exp, tx);
      return {
        success: true,
        accessToken,
        refreshToken: refresh.token,
        expiresIn: signer.accessSeconds,
        tokenType: 'Bearer',
        user: {
          id: user.userId,
          userId: user.userId,
          email: user.email,
          name: subject.name,
          permissions: subject.permissions,
          roles: subject.roles,
        },
      };
    });
  }

  async function linkOrCreate(
    provider: string,
    externalUserId: string,
    email: string | undefined,
    name: string | undefined,
  ): Promise<UserRecord> {
    const linked = await store.findByExternal(provider, externalUserId);
    if (linked) return linked;
    if (!email)
      throw new ServiceError('VALIDATION_ERROR', 'The identity carries no email', {
        details: { email: 'is required' },
      });
    // Twice at most: a concurrent first login with the same email may create the account between look-up and insert.
    for (let attempt = 0; ; attempt++) {
      const existing = await store.findByEmail(email);
      if (existing) return (await store.linkExternal(existing.userId, provider, externalUserId)) ?? existing;
      try {
        return await store.insert({ email, name, role: 'user', permissions: [] }, { provider, externalUserId });
      } catch (err) {
        if (!(err instanceof EmailTaken) || attempt > 0) throw err;
      }
    }
  }

  return {
    async authenticate(input: Input, ctx: HandlerContext) {
      const email = String(input.email ?? '').toLowerCase();
      // The address the gateway saw; a gateway that does not send one puts every caller in one bucket.
      const admission = await throttle.admit(email, ctx.clientAddress ?? 'unknown');
      if (!admission.admitted) {
        throw new ServiceError('RATE_LIMIT_EXCEEDED', 'Too many failed logins for this account; try again later', {
          retryAfter: admission.retryAfter,
        });
      }
      const user = await store.findByEmail(email);
      if (!hashFitsDeadline()) {
        // The database took most of the request's time: answer now rather than after the gateway gave up.
        await admission.release('unchecked');
        throw new ServiceError('SERVICE_UNAVAILABLE', 'The service is busy; try again shortly', { retryAfter: 1 });
      }
      const ok = await timedHash(() => bcrypt.compare(String(input.password ?? ''), user?.passwordHash ?? DUMMY_HASH));
      const succeeded = Boolean(user?.passwordHash && ok);
      await admission.release(succeeded ? 'succeeded' : 'failed');
      if (!succeeded) throw invalidCredentials();
      return issue(user!, ctx);
    },

    /** A new access token from the user's current permissions and roles; the refresh token stays the same. */
    async refresh(input: Input) {
      const claims = await signer.verifyRefresh(String(input.refreshToken ?? ''));
      if (!claims || !(await refreshTokens.isActive(claims.jti))) throw invalidToken();
      const user = await store.get(claims.sub);
      if (!user) throw invalidToken();
      return {
        success: true,
        accessToken: await signer.accessToken(subjectOf(user)),
        expiresIn: signer.accessSeconds,
        tokenType: 'Bearer',
      };
    },

    /** Revokes one refresh token of the caller (any user's for an administrator). An unknown token revokes nothing. */
    async revoke(input: Input, ctx: HandlerContext) {
      const claims = await signer.verifyRefresh(String(input.token ?? ''));
      if (!claims) return { success: true, revoked: false };
      if (claims.sub !== ctx.user?.userId && !isAdmin(ctx)) {
        throw new ServiceError('ACCESS_DENIED', 'This token belongs to another user');
      }
      return changeWithAnswer(store.db, ctx, async (tx) => ({
        success: true,
        revoked: await refreshTokens.revoke(claims.jti, 'revoked', tx),
      }));
    },

    /** Revokes every refresh token of the user; access tokens cannot be revoked and run out by themselves. */
    async logout(input: Input, ctx: HandlerContext) {
      const userId = typeof input.userId === 'string' ? input.userId : ctx.user?.userId;
      if (!userId) throw new ServiceError('UNAUTHORIZED', 'Authentication required');
      if (userId !== ctx.user?.userId && !isAdmin(ctx))
        throw new ServiceError('ACCESS_DENIED', 'You can only log yourself out');
      return changeWithAnswer(store.db, ctx, async (tx) => ({
        success: true,
        revokedTokens: await refreshTokens.revokeAllOf(userId, 'logout', tx),
      }));
    },

    async externalLogin(input: Input, ctx: HandlerContext) {
      const provider = String(input.provider) as ProviderName;
      if (!PROVIDERS.includes(provider))
        throw new ServiceError('INVALID_FORMAT', 'Unknown provider', {
          details: { provider: `must be one of ${PROVIDERS.join(', ')}` },
        });
      const outcome = await deps.external.verify(provider, String(input.idToken ?? ''));
      if (!outcome.ok) {
        if (outcome.reason === 'not-configured') {
          throw new ServiceError('VALIDATION_ERROR', `Login with ${provider} is not configured`, {
            details: { provider: 'is not configured' },
          });
        }
        if (outcome.reason === 'unavailable')
          throw new ServiceError('SERVICE_UNAVAILABLE', `${provider} could not be reached`, {
            status: 503,
            retryAfter: 5,
          });
        throw new ServiceError('INVALID_CREDENTIALS', `The ${provider} id token is not valid`);
      }
      const { identity } = outcome;
      return issue(await linkOrCreate(provider, identity.externalUserId, identity.email, identity.name), ctx);
    },

    async authenticateExternalUser(input: Input, ctx: HandlerContext) {
      const user = await linkOrCreate(
        String(input.externalProvider),
        String(input.externalUserId),
        String(input.email),
        typeof input.name === 'string' ? input.name : undefined,
      );
      return issue(user, ctx);
    },
  };
}
