import {
  decodeProtectedHeader,
  errors as joseErrors,
  jwtVerify,
  type JWTVerifyOptions,
  type ProtectedHeaderParameters,
} from 'jose';
import type { AuthConfig } from '../settings/auth';
import { frozenUser, hasValidSubject, toAuthenticatedUser, type AuthenticatedUser, type Claims } from './claims';
import { KeySetUnavailableError, RemoteKeySet, UnknownKeyError } from './key-set';
import { TokenCache } from './token-cache';
import { bearerToken } from './bearer';
import { invalidToken, keySetUnavailable, noAuthHeader, tokenExpired } from './auth-errors';
import { GatewayError } from '../errors/gateway-error';

/** Algorithms the gateway accepts; anything else is refused before a key is looked up. */
const ACCEPTED_ALGORITHMS = ['HS256', 'RS256'] as const;
type AcceptedAlgorithm = (typeof ACCEPTED_ALGORITHMS)[number];

const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

export interface VerifierStats {
  /** Full (cryptographic) verifications attempted. */
  verifications: number;
  /** Requests answered from the token cache. */
  cacheHits: number;
}

/**
 * Verifies access tokens: HS256 with JWT_SECRET, RS256 with the key set of JWKS_URI (by kid, with JWT_ISSUER and
 * JWT_AUDIENCE), either or both. Every failure is a GatewayError: NO_AUTH_HEADER, TOKEN_EXPIRED, INVALID_TOKEN
 * (401, whatever the library threw) or SERVICE_UNAVAILABLE (503) when the key set cannot be loaded.
 */
export class TokenVerifier {
  readonly stats: VerifierStats = { verifications: 0, cacheHits: 0 };
  readonly keySet?: RemoteKeySet;
  private readonly secret?: Uint8Array;
  private readonly cache: TokenCache;
  private readonly now: () => number;

  /** `now` (ms) is the clock of the token cache, the key set's cooldowns and the exp check: tests move it by hand. */
  constructor(
    private readonly config: AuthConfig,
    deps: { keySet?: RemoteKeySet; fetch?: typeof fetch; now?: () => number } = {},
  ) {
    this.now = deps.now ?? Date.now;
    if (config.jwtSecret !== undefined) this.secret = new TextEncoder().encode(config.jwtSecret);
    if (config.jwksUri !== undefined) {
      this.keySet =
        deps.keySet ??
        new RemoteKeySet({
          uri: config.jwksUri,
          cooldownMs: config.jwksCooldownMs,
          failureBackoffMs: config.jwksFailureBackoffMs,
          timeoutMs: config.jwksTimeoutMs,
          maxAgeMs: config.jwksMaxAgeMs,
          fetch: deps.fetch,
          now: this.now,
        });
    }
    this.cache = new TokenCache(config.tokenCacheMax, config.tokenCacheMaxTtlMs, this.now);
  }

  /** The caller of an Authorization header value; at once for a token in the cache. Throws or rejects GatewayErrors. */
  authenticate(authorization: string | string[] | undefined): AuthenticatedUser | Promise<AuthenticatedUser> {
    const token = wellFormedToken(authorization, this.config.maxTokenBytes);
    return this.cachedUser(token) ?? this.verifyToken(token);
  }

  /**
   * The caller when the token was verified before (in the cache); undefined when it has to be verified
   * (authenticate). Throws the GatewayError of a missing or malformed token.
   */
  knownUser(authorization: string | string[] | undefined): AuthenticatedUser | undefined {
    return this.cachedUser(wellFormedToken(authorization, this.config.maxTokenBytes));
  }

  private cachedUser(token: string): AuthenticatedUser | undefined {
    const cached = this.cache.get(token);
    if (cached) this.stats.cacheHits++;
    return cached;
  }

  private async verifyToken(token: string): Promise<AuthenticatedUser> {
    const header = readHeader(token);
    const alg = header.alg as AcceptedAlgorithm;
    this.stats.verifications++;
    try {
      const key = await this.keyFor(alg, header);
      const options: JWTVerifyOptions = {
        algorithms: [alg],
        clockTolerance: this.config.clockToleranceSeconds,
        currentDate: new Date(this.now()),
        requiredClaims: ['exp', 'sub'],
      };
      // Issuer and audience are checked on RS256 (identity-provider) tokens; HS256 tokens are our own.
      if (alg === 'RS256') {
        if (this.config.issuer !== undefined) options.issuer = this.config.issuer;
        if (this.config.audience !== undefined) options.audience = this.config.audience;
      }
      const { payload } = await jwtVerify(token, key, options);
      const claims = payload as Claims;
      if (typeof claims.exp !== 'number' || !hasValidSubject(claims)) throw invalidToken();
      // A refresh token (claim type = refresh) is no access token.
      if (claims.type === 'refresh') throw invalidToken();
      const user = frozenUser(toAuthenticatedUser(claims));
      this.cache.set(token, user, claims.exp);
      return user;
    } catch (err) {
      throw toAuthError(err);
    }
  }

  private async keyFor(alg: AcceptedAlgorithm, header: ProtectedHeaderParameters): Promise<Uint8Array | CryptoKey> {
    if (alg === 'HS256') {
      if (!this.secret) throw invalidToken();
      return this.secret;
    }
    if (!this.keySet) throw invalidToken();
    // An RS256 token without kid is refused (no guessing among the keys).
    if (typeof header.kid !== 'string' || header.kid === '') throw invalidToken();
    const key = await this.keySet.keyFor(header.kid);
    return key as CryptoKey;
  }

  /** Forgets verified tokens (tests; a key compromise). */
  clearCache(): void {
    this.cache.clear();
  }
}

/** The token (without the "Bearer " prefix) when it can be a compact JWS at all; throws the 401 otherwise. */
function wellFormedToken(authorization: string | string[] | undefined, maxTokenBytes: number): string {
  const token = bearerToken(authorization);
  if (token === undefined) throw noAuthHeader();
  if (token === '' || Buffer.byteLength(token) > maxTokenBytes || !COMPACT_JWS.test(token)) throw invalidToken();
  return token;
}

/**
 * The protected header, checked before any key is looked up: only HS256 and RS256, and no `crit` (no extension is
 * understood here, RFC 7515 §4.1.11). `jku`, `x5u`, `jwk`, `x5c` are ignored: keys come only from our configuration.
 */
function readHeader(token: string): ProtectedHeaderParameters {
  let header: ProtectedHeaderParameters;
  try {
    header = decodeProtectedHeader(token);
  } catch {
    throw invalidToken();
  }
  if (typeof header.alg !== 'string' || !(ACCEPTED_ALGORITHMS as readonly string[]).includes(header.alg))
    throw invalidToken();
  if (header.crit !== undefined) throw invalidToken();
  if (header.b64 !== undefined) throw invalidToken();
  return header;
}

/** Only three outcomes leave: expired, unavailable key set, invalid. Library TypeErrors and the like are invalid. */
function toAuthError(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  if (err instanceof joseErrors.JWTExpired) return tokenExpired();
  if (err instanceof KeySetUnavailableError) return keySetUnavailable(err.retryAfterSeconds);
  if (err instanceof UnknownKeyError) return invalidToken();
  return invalidToken();
}
