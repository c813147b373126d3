import { createHash } from 'node:crypto';
import type { AuthConfig } from '../settings/auth';
import { TokenVerifier } from './verify-token';

const MAX_VERIFIERS = 32;

/**
 * One verifier (key set + token cache) per distinct configuration, shared by every pipeline that uses it: the host
 * builds one policy instance per pipeline and again on every config reload, and each must not fetch the key set
 * or verify a hot token on its own. The runtime holds one.
 */
export class TokenVerifiers {
  private readonly verifiers = new Map<string, TokenVerifier>();

  obtain(config: AuthConfig): TokenVerifier {
    const { developmentAuthEnabled: _dev, ...relevant } = config;
    const key = createHash('sha256').update(JSON.stringify(relevant)).digest('hex');
    let verifier = this.verifiers.get(key);
    if (!verifier) {
      verifier = new TokenVerifier(config);
      if (this.verifiers.size >= MAX_VERIFIERS) this.verifiers.delete(this.verifiers.keys().next().value as string);
      this.verifiers.set(key, verifier);
    }
    return verifier;
  }

  /** Drops every shared verifier (tests). */
  clear(): void {
    this.verifiers.clear();
  }
}
