import { createHash } from 'node:crypto';
import type { Contract } from './types';

declare const POOLED: unique symbol;

/**
 * A contract as the registry hands it out: the one object of the pool (shared by every instance that announced the
 * same contract), deeply frozen when it entered the pool and never changed; a changed contract is a new one. The
 * brand says so to the type checker: only the pool makes one (pooledContract).
 */
export type PooledContract = Contract & { readonly [POOLED]: true };

/** Freezes a contract the registry owns (announcement-validation made it) as it enters the pool. */
function pooledContract(contract: Contract): PooledContract {
  return deepFreeze(contract) as PooledContract;
}

/**
 * An announcement's contracts on their way to the pool: each the pool's object when the pool has one like it, else
 * the announcement's own copy (pooled, and frozen, only when recorded); their pool keys and their bytes as JSON.
 */
export interface Pooled {
  contracts: Contract[];
  hashes: string[];
  bytes: ReadonlyMap<string, number>;
}

export const NOTHING_POOLED: Pooled = { contracts: [], hashes: [], bytes: new Map() };

export interface RetainedBudget {
  perUserBytes: number;
  totalBytes: number;
}

/** What an instance's record holds of the pool: the budget user it counts against and its contracts' pool keys. */
interface Holding {
  readonly user: string;
  readonly hashes: readonly string[];
}

/**
 * The registry's content-addressed pool: every retained contract once, by the hash of its JSON, with how many
 * records hold it; and the retained-bytes budget, per broker user and in total, that an announcement is checked
 * against before it is recorded.
 */
export class ContractPool {
  /** Every retained contract once, by content: instances announcing the same contract share one object. */
  private readonly entries = new Map<string, { contract: PooledContract; bytes: number; refs: number }>();
  private total = 0;
  /** Per budget user: how many of its instances hold each pooled contract, and the bytes of those contracts. */
  private readonly userHeld = new Map<string, { counts: Map<string, number>; bytes: number }>();

  constructor(private readonly budget: RetainedBudget | undefined) {}

  /** Bytes of contracts retained now, each distinct contract once. */
  get totalBytes(): number {
    return this.total;
  }

  /**
   * The pooled copy of each contract (a new one joins the pool only when recorded), and its pool key: identical
   * contracts of many instances are one object, so instances of a service cost what one costs.
   */
  intern(contracts: readonly Contract[]): Pooled {
    const bytes = new Map<string, number>();
    const hashes: string[] = [];
    const shared = contracts.map((contract) => {
      const text = JSON.stringify(contract);
      const hash = createHash('sha256').update(text).digest('base64');
      hashes.push(hash);
      bytes.set(hash, Buffer.byteLength(text));
      return this.entries.get(hash)?.contract ?? contract;
    });
    return { contracts: shared, hashes, bytes };
  }

  /**
   * Why recording these contracts for `user` would go over the retained budget, or undefined. Counts what
   * `previous` (the instance's previous announcement) held as released, and a contract the user (or anyone, for the
   * total) already holds as free: only new bytes count.
   */
  overBudget(user: string, { hashes, bytes }: Pooled, previous: Holding | undefined): string | undefined {
    const budget = this.budget;
    if (!budget) return undefined;
    const released = new Set(previous?.hashes ?? []);
    const unique = new Set(hashes);
    const held = this.userHeld.get(user);
    let userBytes = held?.bytes ?? 0;
    let totalBytes = this.total;
    for (const hash of unique) {
      const size = bytes.get(hash) ?? 0;
      const heldByUser = (held?.counts.get(hash) ?? 0) - (previous?.user === user && released.has(hash) ? 1 : 0);
      if (heldByUser <= 0) userBytes += size;
      const refs = (this.entries.get(hash)?.refs ?? 0) - (released.has(hash) ? 1 : 0);
      if (refs <= 0) totalBytes += size;
    }
    for (const hash of released) {
      if (unique.has(hash)) continue;
      const size = this.entries.get(hash)?.bytes ?? 0;
      if (previous?.user === user && held?.counts.get(hash) === 1) userBytes -= size;
      if (this.entries.get(hash)?.refs === 1) totalBytes -= size;
    }
    if (userBytes > budget.perUserBytes && userBytes > (held?.bytes ?? 0)) {
      return `${user} would retain ${userBytes} bytes of contracts, over ${budget.perUserBytes} (announcementRetainedBytesPerUser)`;
    }
    if (totalBytes > budget.totalBytes && totalBytes > this.total) {
      return `the gateway would retain ${totalBytes} bytes of contracts, over ${budget.totalBytes} (announcementRetainedBytesTotal)`;
    }
    return undefined;
  }

  /**
   * Counts a record's contracts into the pool and its user's share (before the record it replaces is released); a
   * contract new to the pool is frozen as it enters. Returns the pool's objects, in order.
   */
  hold(user: string, { hashes, contracts, bytes }: Pooled): PooledContract[] {
    let held = this.userHeld.get(user);
    if (!held) this.userHeld.set(user, (held = { counts: new Map(), bytes: 0 }));
    return hashes.map((hash, i) => {
      let entry = this.entries.get(hash);
      if (!entry) {
        entry = { contract: pooledContract(contracts[i] as Contract), bytes: bytes.get(hash) ?? 0, refs: 0 };
        this.entries.set(hash, entry);
        this.total += entry.bytes;
      }
      entry.refs += 1;
      const count = held.counts.get(hash) ?? 0;
      if (count === 0) held.bytes += entry.bytes;
      held.counts.set(hash, count + 1);
      return entry.contract;
    });
  }

  /** Gives back what a holding counted (its record was replaced or dropped); a contract nobody holds leaves. */
  release(record: Holding): void {
    const held = this.userHeld.get(record.user);
    for (const hash of record.hashes) {
      const entry = this.entries.get(hash);
      if (!entry) continue;
      entry.refs -= 1;
      if (entry.refs <= 0) {
        this.entries.delete(hash);
        this.total -= entry.bytes;
      }
      const count = held?.counts.get(hash) ?? 0;
      if (held && count <= 1) {
        held.counts.delete(hash);
        held.bytes -= entry.bytes;
      } else held?.counts.set(hash, count - 1);
    }
    if (held && held.counts.size === 0) this.userHeld.delete(record.user);
  }

  /** Bytes of contracts retained (each distinct contract once), in total and per budget (`broker user U`, `service S`). */
  retained(): { totalBytes: number; byUser: Record<string, number> } {
    return {
      totalBytes: this.total,
      byUser: Object.fromEntries([...this.userHeld].map(([user, held]) => [user, held.bytes])),
    };
  }
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
