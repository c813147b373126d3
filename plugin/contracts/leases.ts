import type { PooledContract } from './pool';

/** What the discovery/debug endpoints show per service instance. */
export interface InstanceInfo {
  service: string;
  instanceId: string;
  lastSeen: number;
  leaseExpiresAt: number;
  messageTypes: string[];
}

/** One service instance as the registry keeps it: what it announced last, for whom it counts, and its lease. */
export interface InstanceRecord {
  service: string;
  instanceId: string;
  /** Shared with every other instance that announced the same contract (the pool). */
  contracts: PooledContract[];
  /** Pool keys of `contracts`, in the same order. */
  hashes: string[];
  /** The budget's key for the broker user that announced it. */
  user: string;
  /** That broker user, when broker users are required (a first-use pin binds it). */
  brokerUser: string | undefined;
  lastSeen: number;
  leaseExpiresAt: number;
  ttlMs: number;
  /** When this instance's contracts last differed from what it announced before; decides "newest". */
  changedAt: number;
  /** Apply order of that change, to break ties between equal timestamps. */
  changedSeq: number;
  /** The Retry-After of this instance's maintenance, when its last announcement said it is in maintenance. */
  maintenanceSeconds: number | undefined;
}

/**
 * The registry's leases: one record per service instance, by service too (so per-service limits cost no scan of
 * every record), renewed when the instance re-announces and gone when it withdraws or its lease runs out. What a
 * record holds of the contract pool is the registry's to release when one goes.
 */
export class Leases {
  private readonly records = new Map<string, InstanceRecord>();
  private readonly byService = new Map<string, Map<string, InstanceRecord>>();

  get(service: string, instanceId: string): InstanceRecord | undefined {
    return this.records.get(instanceKey(service, instanceId));
  }

  /** Whether any instance of the service holds a lease. */
  hasService(service: string): boolean {
    return this.byService.has(service);
  }

  /** The instances of a service; undefined when it has none. */
  instancesOf(service: string): ReadonlyMap<string, InstanceRecord> | undefined {
    return this.byService.get(service);
  }

  /**
   * The Retry-After of a service every live instance of which announced maintenance (the soonest any of them
   * expects to be back); undefined while any instance serves, or when the service has none.
   */
  maintenanceOf(service: string): number | undefined {
    let soonest: number | undefined;
    for (const record of this.byService.get(service)?.values() ?? []) {
      if (record.maintenanceSeconds === undefined) return undefined;
      soonest = Math.min(soonest ?? record.maintenanceSeconds, record.maintenanceSeconds);
    }
    return soonest;
  }

  get serviceCount(): number {
    return this.byService.size;
  }

  get instanceCount(): number {
    return this.records.size;
  }

  all(): IterableIterator<InstanceRecord> {
    return this.records.values();
  }

  /** Adds the record, or replaces the one of the same instance. */
  keep(record: InstanceRecord): void {
    const key = instanceKey(record.service, record.instanceId);
    this.records.set(key, record);
    const siblings = this.byService.get(record.service) ?? new Map<string, InstanceRecord>();
    siblings.set(key, record);
    this.byService.set(record.service, siblings);
  }

  /** Removes an instance's record; returns it (undefined when there was none). */
  remove(service: string, instanceId: string): InstanceRecord | undefined {
    const key = instanceKey(service, instanceId);
    const record = this.records.get(key);
    if (!record) return undefined;
    this.records.delete(key);
    const siblings = this.byService.get(record.service);
    siblings?.delete(key);
    if (siblings?.size === 0) this.byService.delete(record.service);
    return record;
  }

  /** A whole lease from `now` for a known instance; false when it is not known. */
  renew(service: string, instanceId: string, now: number): boolean {
    const record = this.get(service, instanceId);
    if (!record) return false;
    record.lastSeen = now;
    record.leaseExpiresAt = now + record.ttlMs;
    return true;
  }

  /** The records whose lease ran out by `now` (still kept: the caller removes them). */
  expired(now: number): InstanceRecord[] {
    return [...this.records.values()].filter((record) => record.leaseExpiresAt <= now);
  }

  /** At least a whole lease from `now` for every instance. */
  renewAll(now: number): void {
    for (const record of this.records.values())
      record.leaseExpiresAt = Math.max(record.leaseExpiresAt, now + record.ttlMs);
  }
}

function instanceKey(service: string, instanceId: string): string {
  return JSON.stringify([service, instanceId]);
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function toInfo(record: InstanceRecord): InstanceInfo {
  return {
    service: record.service,
    instanceId: record.instanceId,
    lastSeen: record.lastSeen,
    leaseExpiresAt: record.leaseExpiresAt,
    messageTypes: record.contracts.map((c) => c.messageType).sort(compareText),
  };
}

export function compareInfo(a: InstanceInfo, b: InstanceInfo): number {
  return compareText(a.service, b.service) || compareText(a.instanceId, b.instanceId);
}
