import { createHash } from 'node:crypto';
import type { AuthConfig } from './auth-config';
import { TokenVerifier } from './verify-token';

/**
 * One verifier (key set + token cache) per distinct configuration, shared by every pipeline that uses it: the host
 * builds one policy instance per pipeline and again on every config reload, and each must not fetch the key set
 * or verify a hot token on its own.
 */
const verifiers = new Map<string, TokenVerifier>();
const MAX_VERIFIERS = 32;

export function obtainVerifier(config: AuthConfig): TokenVerifier {
  const { developmentAuthEnabled: _dev, ...relevant } = config;
  const key = createHash('sha256').update(JSON.stringify(relevant)).digest('hex');
  let verifier = verifiers.get(key);
  if (!verifier) {
    verifier = new TokenVerifier(config);
    if (verifiers.size >= MAX_VERIFIERS) verifiers.delete(verifiers.keys().next().value as string);
    verifiers.set(key, verifier);
  }
  return verifier;
}

/** Drops every shared verifier (tests). */
export function resetVerifiers(): void {
  verifiers.clear();
}
