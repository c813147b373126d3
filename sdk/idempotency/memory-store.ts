import { randomUUID } from 'node:crypto';
import type { Reply } from '../../plugin/bus/transport';
import {
  IdempotencyClaimLost,
  type Claim,
  type ClaimRequest,
  type IdempotencyId,
  type IdempotencyStore,
} from './store';

interface Entry {
  fingerprint: string;
  token: string;
  reply?: Reply;
  leaseUntil: number;
  expiresAt: number;
}

/** Sweep expired entries once this many claims were made since the last sweep. */
const SWEEP_EVERY = 1000;
const DEFAULT_MAX_ENTRIES = 100_000;

/**
 * Keys in this process's memory: right for one instance and for tests. Two instances each have their own, so a
 * redelivery to the other instance is not recognised: share a PostgreSQL store between instances.
 */
export class MemoryIdempotencyStore implements IdempotencyStore {
  private readonly entries = new Map<string, Entry>();
  private claims = 0;

  /**
   * `now`: the clock, injectable for tests. `maxEntries`: beyond it the oldest keys are forgotten first (a bound on
   * memory for 24 h of keys; a forgotten key runs its request again).
   */
  constructor(
    private readonly now: () => number = Date.now,
    private readonly maxEntries = DEFAULT_MAX_ENTRIES,
  ) {}

  async claim({ id, fingerprint, ttlMs, leaseMs, token: given }: ClaimRequest): Promise<Claim> {
    if (++this.claims % SWEEP_EVERY === 0) void this.purgeExpired();
    const name = nameOf(id);
    const now = this.now();
    const entry = this.entries.get(name);
    const takeOver =
      entry !== undefined &&
      entry.expiresAt > now &&
      !entry.reply &&
      entry.leaseUntil <= now &&
      entry.fingerprint === fingerprint;
    if (entry && entry.expiresAt > now && !takeOver) {
      return entry.reply
        ? { state: 'done', fingerprint: entry.fingerprint, reply: structuredClone(entry.reply) }
        : { state: 'running', fingerprint: entry.fingerprint };
    }
    const token = given ?? randomUUID();
    if (!entry && this.entries.size >= this.maxEntries) this.forgetOldest();
    this.entries.set(name, {
      fingerprint,
      token,
      leaseUntil: now + leaseMs,
      expiresAt: takeOver ? entry.expiresAt : now + ttlMs,
    });
    return { state: 'claimed', token };
  }

  async renew(id: IdempotencyId, token: string, leaseMs: number): Promise<boolean> {
    const entry = this.running(id, token);
    if (entry) entry.leaseUntil = this.now() + leaseMs;
    return entry !== undefined;
  }

  async complete(id: IdempotencyId, token: string, reply: Reply): Promise<void> {
    const entry = this.running(id, token);
    if (!entry) throw new IdempotencyClaimLost();
    entry.reply = structuredClone(reply);
  }

  async release(id: IdempotencyId, token: string): Promise<void> {
    if (this.running(id, token)) this.entries.delete(nameOf(id));
  }

  async purgeExpired(): Promise<number> {
    const now = this.now();
    let n = 0;
    for (const [name, entry] of this.entries) {
      if (entry.expiresAt <= now) {
        this.entries.delete(name);
        n += 1;
      }
    }
    return n;
  }

  private forgetOldest(): void {
    const oldest = this.entries.keys().next();
    if (!oldest.done) this.entries.delete(oldest.value);
  }

  private running(id: IdempotencyId, token: string): Entry | undefined {
    const entry = this.entries.get(nameOf(id));
    return entry && entry.token === token && !entry.reply ? entry : undefined;
  }
}

function nameOf(id: IdempotencyId): string {
  return JSON.stringify([id.service, id.caller, id.key]);
}
