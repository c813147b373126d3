import { randomUUID } from 'node:crypto';
import { SignJWT, jwtVerify, errors } from 'jose';
import type { Lifetimes } from './lifetimes';

export interface TokenSubject {
  userId: string;
  email: string;
  name: string;
  permissions: string[];
  roles: string[];
}

export interface SignerConfig {
  secret: string;
  issuer?: string;
  audience?: string;
  lifetimes: Lifetimes;
}

export interface RefreshClaims {
  sub: string;
  jti: string;
  exp: number;
}

/** Issues and checks the tokens of the reference auth service (HS256 with JWT_SECRET, as the gateway verifies them). */
export class TokenSigner {
  private readonly key: Uint8Array;

  constructor(private readonly config: SignerConfig) {
    if (config.secret.length < 32) throw new Error('JWT_SECRET must be at least 32 characters');
    this.key = new TextEncoder().encode(config.secret);
  }

  get accessSeconds(): number {
    return this.config.lifetimes.accessSeconds;
  }

  accessToken(subject: TokenSubject): Promise<string> {
    const jwt = new SignJWT({
      email: subject.email,
      name: subject.name,
      permissions: subject.permissions,
      roles: subject.roles,
    })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(subject.userId)
      .setIssuedAt()
      .setExpirationTime(`${this.config.lifetimes.accessSeconds}s`);
    return this.withIssuer(jwt).sign(this.key);
  }

  /** A refresh token carries no permissions: a refresh reads the user's current ones. */
  async refreshToken(userId: string): Promise<{ token: string; jti: string; exp: number }> {
    const jti = randomUUID();
    const exp = Math.floor(Date.now() / 1000) + this.config.lifetimes.refreshSeconds;
    const token = await this.withIssuer(
      new SignJWT({ type: 'refresh' })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setSubject(userId)
        .setJti(jti)
        .setIssuedAt()
        .setExpirationTime(exp),
    ).sign(this.key);
    return { token, jti, exp };
  }

  /** Null for anything that is not a valid, unexpired refresh token of ours (an access token included). */
  async verifyRefresh(token: string): Promise<RefreshClaims | null> {
    try {
      const { payload } = await jwtVerify(token, this.key, {
        algorithms: ['HS256'],
        issuer: this.config.issuer,
        audience: this.config.audience,
        requiredClaims: ['sub', 'jti', 'exp'],
      });
      if (payload.type !== 'refresh' || typeof payload.sub !== 'string' || typeof payload.jti !== 'string') return null;
      return { sub: payload.sub, jti: payload.jti, exp: payload.exp as number };
    } catch (err) {
      if (err instanceof errors.JOSEError || err instanceof TypeError) return null;
      throw err;
    }
  }

  private withIssuer(jwt: SignJWT): SignJWT {
    if (this.config.issuer) jwt.setIssuer(this.config.issuer);
    if (this.config.audience) jwt.setAudience(this.config.audience);
    return jwt;
  }
}
