import { hash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { frozenUser, type AuthenticatedUser } from './claims';

interface Entry {
  user: AuthenticatedUser;
  /** The token's exp, in ms: an entry is never used past it, whatever the LRU's own clock says. */
  expiresAt: number;
}

/**
 * Verified tokens (LRU, bounded), so a token in use is not verified again on every request. Keys are SHA-256
 * digests of the token (a bounded size, and no bearer credential kept in memory as such). An entry lives at most
 * `maxTtlMs` and never past the token's exp; clock tolerance only ever applies to a full verification.
 */
export class TokenCache {
  private readonly cache?: LRUCache<string, Entry>;
  private readonly maxTtlMs: number;
  private readonly now: () => number;
  hits = 0;
  misses = 0;

  constructor(max: number, maxTtlMs: number, now: () => number = Date.now) {
    this.maxTtlMs = maxTtlMs;
    this.now = now;
    if (max > 0) this.cache = new LRUCache<string, Entry>({ max, ttlAutopurge: false });
  }

  get(token: string): AuthenticatedUser | undefined {
    if (!this.cache) return undefined;
    const key = digest(token);
    const entry = this.cache.get(key);
    if (!entry || entry.expiresAt <= this.now()) {
      if (entry) this.cache.delete(key);
      this.misses++;
      return undefined;
    }
    this.hits++;
    // Frozen, so every request of the token can share it without one changing what the next one sees.
    return entry.user;
  }

  set(token: string, user: AuthenticatedUser, expSeconds: number): void {
    if (!this.cache) return;
    const expiresAt = expSeconds * 1000;
    const ttl = Math.min(expiresAt - this.now(), this.maxTtlMs);
    if (!(ttl >= 1)) return; // accepted only thanks to the clock tolerance: not worth keeping
    this.cache.set(
      digest(token),
      { user: Object.isFrozen(user) ? user : frozenUser(user), expiresAt },
      { ttl: Math.floor(ttl) },
    );
  }

  get size(): number {
    return this.cache?.size ?? 0;
  }

  clear(): void {
    this.cache?.clear();
  }
}

/** Every request with a token pays for this: the one-shot hash() costs half of createHash().update().digest(). */
function digest(token: string): string {
  return hash('sha256', token, 'base64url');
}
