import { createHash } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { Announcement, Contract } from './types';
import { resolveOwnership, type Claim, type OwnershipRules, type Refusal, type RegistryConflict } from './ownership';
import type { AnnouncementLimits } from './limits';
import {
  limitsOf,
  validateAnnouncement,
  type ValidationOptions,
  type ValidationResult,
} from './announcement-validation';
import { canonical } from './canonical';
import { inert, OnceLog } from '../log-once';
import type { Logger } from '../logger';
import { errorMessage } from '../errors/describe';
import { BreakingChangeGate, type BreakingChange, type BreakingChangeMode, type ServedView } from '../compat/gate';
import { isRecord } from '../is-record';
import type { FirstUsePins } from './first-use';

/** What the discovery/debug endpoints show per service instance. */
export interface InstanceInfo {
  service: string;
  instanceId: string;
  lastSeen: number;
  leaseExpiresAt: number;
  messageTypes: string[];
}

export type ApplyResult = { accepted: true; changed: boolean } | { accepted: false; changed: false; reason: string };

/** One announcement taken (recorded, union not yet rebuilt) or refused. */
export type TakeResult = { accepted: true } | { accepted: false; changed: false; reason: string };

export interface RegistryOptions extends ValidationOptions {
  now?: () => number;
  logger?: Pick<Logger, 'warn'>;
  /** Pinned ownership and what services may declare; first-come decides the rest. */
  rules?: OwnershipRules;
  /**
   * Longest lease an instance holds: a longer one is clamped to it and logged, so the claims of a claimant that
   * died (never withdrew) lapse within it. Unset: maxTtlMs.
   */
  maxLeaseMs?: number;
  /**
   * Bytes of contracts (as JSON) the registry retains, per broker user and in total. Identical contracts are kept
   * once and counted once; an announcement that would go over either budget is refused. Unset: unbounded.
   */
  budget?: RetainedBudget;
  /** What a change that breaks clients of a served contract gets (docs/compatibility.md); unset: accept. */
  breakingChanges?: BreakingChangeMode;
  /** Trust on first use: who first held each message type keeps it; each type served is pinned to its holder. */
  firstUse?: FirstUsePins;
}

interface RetainedBudget {
  perUserBytes: number;
  totalBytes: number;
}

/** Who published an announcement, as the budget counts it. */
export interface Announcer {
  /**
   * The broker user (RabbitMQ's validated user_id) when it identifies one service (broker users required); unset,
   * the budget is the announcing service's own, since a shared user tells nobody apart.
   */
  userId?: string;
}

export interface RegistryEvents {
  change: [contracts: Contract[]];
  conflict: [conflicts: RegistryConflict[]];
  /** Every announcement applied or refused (metrics count them by reason). */
  /** Every announcement taken or refused, before the union is rebuilt (for counting). */
  announcement: [result: TakeResult];
  /** A breaking change seen for the first time, accepted or refused (metrics count them). */
  breaking: [change: BreakingChange];
  /** A service went into maintenance (every live instance says so: the Retry-After) or out of it (undefined). */
  maintenance: [service: string, retryAfterSeconds: number | undefined];
}

/** An announcement's contracts as the pool holds them: shared objects, their pool keys and their bytes as JSON. */
interface Pooled {
  contracts: Contract[];
  hashes: string[];
  bytes: ReadonlyMap<string, number>;
}

const NOTHING_POOLED: Pooled = { contracts: [], hashes: [], bytes: new Map() };

interface InstanceRecord {
  service: string;
  instanceId: string;
  /** Shared with every other instance that announced the same contract (the pool). */
  contracts: Contract[];
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

/** Refusals logged one by one per rebuild of the union; more are counted in one line. */
const MAX_REFUSAL_LINES = 20;

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * The live set of contracts, fed by announcements. Each service instance holds a lease; the union of
 * the instances' contracts (one per message type) is what the gateway serves. `change` fires only when
 * that union's content changes, so periodic re-announcements are free.
 */
export class ContractRegistry extends EventEmitter<RegistryEvents> {
  private readonly now: () => number;
  private readonly logger: Pick<Logger, 'warn'> | undefined;
  private readonly options: RegistryOptions;
  private readonly limits: AnnouncementLimits;
  /** The ownership rules, with the first-use pins when there are any. */
  private readonly rules: OwnershipRules;
  /** Refused announcements: one line per sender and reason, not one per re-announcement. */
  private readonly refusedLog: OnceLog;
  private readonly records = new Map<string, InstanceRecord>();
  /** The records of each service, so per-service limits cost no scan of every record. */
  private readonly byService = new Map<string, Map<string, InstanceRecord>>();
  /** Services every live instance of which is in maintenance → the Retry-After they answer (read per request). */
  private readonly inMaintenance = new Map<string, number>();
  private union: Contract[] = [];
  /** `union` by message type, each replaced by its frozen snapshot on first get(); rebuilt after a change. */
  private byType: Map<string, Contract> | undefined;
  /** `union` by target service, for the breaking-change gate; rebuilt after a change. */
  private servedByService: Map<string, Contract[]> | undefined;
  private unionFingerprint = canonical([]);
  private currentConflicts: RegistryConflict[] = [];
  private currentRefusals: Refusal[] = [];
  /** When each service first claimed each message type (JSON [service, messageType] → seq), while it still does. */
  private readonly claimSeq = new Map<string, number>();
  private seq = 0;
  private timer: NodeJS.Timeout | undefined;
  /** Every retained contract once, by content: instances announcing the same contract share one object. */
  private readonly pool = new Map<string, { contract: Contract; bytes: number; refs: number }>();
  private poolBytes = 0;
  /** Per budget user: how many of its instances hold each pooled contract, and the bytes of those contracts. */
  private readonly userHeld = new Map<string, { counts: Map<string, number>; bytes: number }>();
  private readonly gate: BreakingChangeGate;
  private readonly servedView: ServedView = {
    served: (messageType) => this.get(messageType),
    servedOf: (service) => {
      if (!this.servedByService) {
        this.servedByService = new Map();
        for (const c of this.union) {
          const list = this.servedByService.get(c.targetService);
          if (list) list.push(c);
          else this.servedByService.set(c.targetService, [c]);
        }
      }
      return this.servedByService.get(service) ?? [];
    },
    previous: (service, instanceId) => this.records.get(instanceKey(service, instanceId))?.contracts,
  };

  constructor(options: RegistryOptions = {}) {
    super();
    this.options = options;
    this.now = options.now ?? Date.now;
    this.logger = options.logger;
    this.limits = limitsOf(options);
    this.rules = options.firstUse ? { ...options.rules, firstUse: options.firstUse } : (options.rules ?? {});
    // A pin released by hand (the release command) decides again at once.
    if (options.firstUse) options.firstUse.onReload = () => this.recompute();
    this.refusedLog = new OnceLog(options.logger, { now: this.now });
    this.gate = new BreakingChangeGate(
      options.breakingChanges ?? 'accept',
      options.logger,
      (change) => this.safeEmit('breaking', change),
      this.now,
    );
  }

  /** Applies one announcement (or withdrawal). Never throws; a malformed one is rejected with its reason. */
  apply(input: unknown, from: Announcer = {}): ApplyResult {
    const result = this.take(input, from);
    return result.accepted ? { accepted: true, changed: this.recompute() } : result;
  }

  /**
   * Applies a batch (what arrived during one interval) with a single rebuild of the union: at most one `change`.
   * Returns whether each one was accepted (in order) and whether the contracts changed.
   */
  applyAll(inputs: readonly unknown[], from: readonly Announcer[] = []): { accepted: boolean[]; changed: boolean } {
    const accepted = inputs.map((input, i) => this.take(input, from[i] ?? {}).accepted);
    return { accepted, changed: accepted.includes(true) && this.recompute() };
  }

  /**
   * Renews the lease of a known instance that re-announced exactly what it announced before: no validation, no
   * rebuild. False when the instance is not known (then the announcement has to be applied).
   */
  renew(service: string, instanceId: string): boolean {
    const record = this.records.get(instanceKey(service, instanceId));
    if (!record) return false;
    const now = this.now();
    record.lastSeen = now;
    record.leaseExpiresAt = now + record.ttlMs;
    return true;
  }

  /**
   * Records one announcement without rebuilding the union; `apply` and `applyAll` rebuild. A refused one changes
   * nothing and is logged once per sender and reason.
   */
  private take(input: unknown, from: Announcer): TakeResult {
    let validation: ValidationResult;
    const early = isRecord(input) ? this.refusedUnread(input.service, input.withdrawn) : undefined;
    try {
      validation = early !== undefined ? { ok: false, reason: early } : validateAnnouncement(input, this.options);
    } catch (error) {
      // structuredClone can throw on exotic input; that is malformed too.
      validation = { ok: false, reason: `announcement could not be read: ${errorMessage(error)}` };
    }
    if (validation.ok) validation.announcement.contracts = this.gate.screen(validation.announcement, this.servedView);
    const user =
      from.userId !== undefined
        ? `broker user ${inert(from.userId)}`
        : `service ${inert(isRecord(input) ? input.service : '?')}`;
    const pooled = validation.ok ? this.intern(validation.announcement.contracts) : NOTHING_POOLED;
    let refused = validation.ok ? this.overBudget(validation.announcement, user, pooled) : validation.reason;
    refused ??= validation.ok ? this.overCapacity(validation.announcement) : undefined;
    if (refused !== undefined) {
      const from = isRecord(input) ? input : {};
      const [service, instanceId] = [inert(from.service ?? '?'), inert(from.instanceId ?? '?')];
      this.refusedLog.warn(
        JSON.stringify([service, instanceId, refused]),
        `contract registry: refused announcement from service ${service} instance ${instanceId}: ${refused}`,
      );
      return this.applied({ accepted: false, changed: false, reason: refused });
    }
    const announcement = (validation as { announcement: Announcement }).announcement;
    const maxLease = this.options.maxLeaseMs;
    if (maxLease !== undefined && announcement.ttlMs > maxLease) {
      this.refusedLog.warn(
        JSON.stringify([announcement.service, 'lease']),
        `contract registry: ${inert(announcement.service)} instance ${inert(announcement.instanceId)} asked for a lease of ${announcement.ttlMs} ms; clamped to ${maxLease} ms (maxLeaseMs)`,
      );
      announcement.ttlMs = maxLease;
    }
    const key = instanceKey(announcement.service, announcement.instanceId);
    if (announcement.withdrawn) {
      this.drop(key);
    } else {
      this.record(key, announcement, user, pooled, from.userId);
    }
    return this.applied({ accepted: true });
  }

  /**
   * The pooled copy of each contract (a new one joins the pool only when recorded), and its pool key: identical
   * contracts of many instances are one object, so instances of a service cost what one costs.
   */
  private intern(contracts: readonly Contract[]): Pooled {
    const bytes = new Map<string, number>();
    const hashes: string[] = [];
    const shared = contracts.map((contract) => {
      const text = JSON.stringify(contract);
      const hash = createHash('sha256').update(text).digest('base64');
      hashes.push(hash);
      bytes.set(hash, Buffer.byteLength(text));
      return this.pool.get(hash)?.contract ?? contract;
    });
    return { contracts: shared, hashes, bytes };
  }

  /**
   * Why recording these contracts for `user` would go over the retained budget, or undefined. Counts what the
   * instance's previous announcement held as released, and a contract the user (or anyone, for the total) already
   * holds as free: only new bytes count.
   */
  private overBudget(announcement: Announcement, user: string, { hashes, bytes }: Pooled): string | undefined {
    const budget = this.options.budget;
    if (!budget || announcement.withdrawn) return undefined;
    const previous = this.records.get(instanceKey(announcement.service, announcement.instanceId));
    const released = new Set(previous?.hashes ?? []);
    const unique = new Set(hashes);
    const held = this.userHeld.get(user);
    let userBytes = held?.bytes ?? 0;
    let totalBytes = this.poolBytes;
    for (const hash of unique) {
      const size = bytes.get(hash) ?? 0;
      const heldByUser = (held?.counts.get(hash) ?? 0) - (previous?.user === user && released.has(hash) ? 1 : 0);
      if (heldByUser <= 0) userBytes += size;
      const refs = (this.pool.get(hash)?.refs ?? 0) - (released.has(hash) ? 1 : 0);
      if (refs <= 0) totalBytes += size;
    }
    for (const hash of released) {
      if (unique.has(hash)) continue;
      const size = this.pool.get(hash)?.bytes ?? 0;
      if (previous?.user === user && held?.counts.get(hash) === 1) userBytes -= size;
      if (this.pool.get(hash)?.refs === 1) totalBytes -= size;
    }
    if (userBytes > budget.perUserBytes && userBytes > (held?.bytes ?? 0)) {
      return `${user} would retain ${userBytes} bytes of contracts, over ${budget.perUserBytes} (announcementRetainedBytesPerUser)`;
    }
    if (totalBytes > budget.totalBytes && totalBytes > this.poolBytes) {
      return `the gateway would retain ${totalBytes} bytes of contracts, over ${budget.totalBytes} (announcementRetainedBytesTotal)`;
    }
    return undefined;
  }

  /**
   * Why a new service's announcement is refused whatever it holds, or undefined: known before it is read, so a flood
   * under new service names costs no validation once maxServices is reached or the total budget is all but full
   * (within one announcement, at most an eighth of it: a new service's contracts name it, so none is held already).
   */
  private refusedUnread(service: unknown, withdrawn: unknown): string | undefined {
    if (typeof service !== 'string' || withdrawn === true || this.byService.has(service)) return undefined;
    if (this.byService.size >= this.limits.maxServices)
      return `more than ${this.limits.maxServices} services (announcedServicesMax)`;
    const total = this.options.budget?.totalBytes;
    if (total !== undefined && this.poolBytes > total - Math.min(this.limits.maxBytes, total / 8))
      return `the gateway retains ${this.poolBytes} bytes of contracts, too close to ${total} for a new service (announcementRetainedBytesTotal)`;
    return undefined;
  }

  /**
   * A new instance beyond maxInstancesPerService replaces the one of its service heard from longest ago (a crashed
   * instance never withdraws; a live one comes back on re-announcing).
   */
  private overCapacity(announcement: Announcement): string | undefined {
    if (announcement.withdrawn || this.records.has(instanceKey(announcement.service, announcement.instanceId)))
      return undefined;
    const siblings = this.byService.get(announcement.service);
    if (!siblings) return undefined; // a new service beyond maxServices was refused unread (refusedUnread)
    if (siblings.size >= this.limits.maxInstancesPerService) {
      const stalest = [...siblings.values()].reduce((a, b) => (b.lastSeen < a.lastSeen ? b : a));
      this.drop(instanceKey(stalest.service, stalest.instanceId));
      this.refusedLog.warn(
        JSON.stringify([announcement.service, 'instances']),
        `contract registry: ${inert(announcement.service)} has more than ${this.limits.maxInstancesPerService} instances (serviceMaxInstances); dropped the one heard from longest ago`,
      );
    }
    return undefined;
  }

  /**
   * An announcement refused before it reached the registry (the inbox's trust check): counted with the others by
   * the `announcement` listeners, changing nothing.
   */
  refuse(reason: string): void {
    this.applied({ accepted: false, changed: false, reason });
  }

  private applied(result: TakeResult): TakeResult {
    this.safeEmit('announcement', result);
    return result;
  }

  /** How many contracts, services and instances are known, without copying anything (read at every metrics scrape). */
  counts(): { contracts: number; services: number; instances: number } {
    return { contracts: this.union.length, services: this.byService.size, instances: this.records.size };
  }

  /** Drops every instance whose lease ran out by `now`; returns the dropped instances. */
  expire(now: number = this.now()): InstanceInfo[] {
    const dropped: InstanceInfo[] = [];
    for (const [key, record] of this.records) {
      if (record.leaseExpiresAt <= now) {
        dropped.push(toInfo(record));
        this.drop(key);
      }
    }
    if (dropped.length > 0) this.recompute();
    return dropped.sort(compareInfo);
  }

  /**
   * Gives every instance at least a whole lease from `now`: after the gateway could not hear the bus, its
   * instances get the time to be heard again before their routes go.
   */
  renewLeases(now: number = this.now()): void {
    for (const record of this.records.values())
      record.leaseExpiresAt = Math.max(record.leaseExpiresAt, now + record.ttlMs);
  }

  /** The current union, sorted by message type. */
  contracts(): Contract[] {
    return this.union.map((c) => structuredClone(c));
  }

  /**
   * The contract of a message type, read on every request: a frozen (read-only, deeply) snapshot shared until the
   * union changes, so the hot path neither searches the list nor clones schemas; copy it to change it.
   */
  get(messageType: string): Contract | undefined {
    this.byType ??= new Map(this.union.map((c) => [c.messageType, c]));
    const found = this.byType.get(messageType);
    // Union entries are never frozen themselves: a frozen one is already the snapshot.
    if (!found || Object.isFrozen(found)) return found;
    const snapshot = deepFreeze(structuredClone(found));
    this.byType.set(messageType, snapshot);
    return snapshot;
  }

  instances(): InstanceInfo[] {
    return [...this.records.values()].map(toInfo).sort(compareInfo);
  }

  /** Message types announced by more than one service right now; `services[0]` holds it. */
  conflicts(): RegistryConflict[] {
    return this.currentConflicts.map((c) => ({ messageType: c.messageType, services: [...c.services] }));
  }

  /** Contracts announced but not served (held by another service, or against the ownership rules), with why. */
  refusals(): Refusal[] {
    return this.currentRefusals.map((r) => ({ ...r }));
  }

  /** Breaking changes seen to contracts served now: accepted (warn) or refused, with why. */
  breakingChanges(): BreakingChange[] {
    return this.gate.list();
  }

  /**
   * Expires leases periodically, except while `held()` (the gateway cannot hear renewals: its bus is impaired); the
   * timer does not keep the process alive. Restarting replaces it.
   */
  startExpiry(intervalMs: number, held: () => boolean = () => false): void {
    this.stop();
    this.timer = setInterval(() => {
      if (!held()) this.expire();
    }, intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  private record(
    key: string,
    announcement: Announcement,
    user: string,
    pooled: Pooled,
    brokerUser: string | undefined,
  ): void {
    const { hashes, contracts } = pooled;
    const now = this.now();
    const previous = this.records.get(key);
    const sameContracts =
      previous !== undefined &&
      previous.hashes.length === hashes.length &&
      previous.hashes.every((h, i) => h === hashes[i]);
    this.seq += 1;
    this.hold(user, pooled);
    if (previous) this.release(previous);
    this.keep(key, {
      service: announcement.service,
      instanceId: announcement.instanceId,
      contracts,
      hashes,
      user,
      brokerUser,
      lastSeen: now,
      leaseExpiresAt: now + announcement.ttlMs,
      ttlMs: announcement.ttlMs,
      // A plain re-announcement keeps its age, so two instances re-announcing in turn never flip-flop.
      changedAt: sameContracts ? previous.changedAt : now,
      changedSeq: sameContracts ? previous.changedSeq : this.seq,
      maintenanceSeconds: announcement.maintenance?.retryAfterSeconds,
    });
    this.maintenanceChanged(announcement.service);
  }

  /**
   * The Retry-After of a service in maintenance (every live instance announced it; the soonest any of them expects
   * to be back), or undefined while any instance serves. Read on every request: a lookup.
   */
  maintenance(service: string): number | undefined {
    return this.inMaintenance.get(service);
  }

  /** The services in maintenance now, by name, with their Retry-After (GET /health lists them). */
  servicesInMaintenance(): Array<{ service: string; retryAfterSeconds: number }> {
    return [...this.inMaintenance]
      .map(([service, retryAfterSeconds]) => ({ service, retryAfterSeconds }))
      .sort((a, b) => compareText(a.service, b.service));
  }

  /** Recomputes whether `service` is in maintenance after its instances changed; emits on a change only. */
  private maintenanceChanged(service: string): void {
    let soonest: number | undefined;
    for (const record of this.byService.get(service)?.values() ?? []) {
      if (record.maintenanceSeconds === undefined) {
        soonest = undefined;
        break;
      }
      soonest = Math.min(soonest ?? record.maintenanceSeconds, record.maintenanceSeconds);
    }
    if (soonest === this.inMaintenance.get(service)) return;
    if (soonest === undefined) this.inMaintenance.delete(service);
    else this.inMaintenance.set(service, soonest);
    this.safeEmit('maintenance', service, soonest);
  }

  private keep(key: string, record: InstanceRecord): void {
    this.records.set(key, record);
    const siblings = this.byService.get(record.service) ?? new Map<string, InstanceRecord>();
    siblings.set(key, record);
    this.byService.set(record.service, siblings);
  }

  /** Counts a record's contracts into the pool and its user's share (before the record it replaces is released). */
  private hold(user: string, { hashes, contracts, bytes }: Pooled): void {
    let held = this.userHeld.get(user);
    if (!held) this.userHeld.set(user, (held = { counts: new Map(), bytes: 0 }));
    hashes.forEach((hash, i) => {
      let entry = this.pool.get(hash);
      if (!entry) {
        entry = { contract: contracts[i] as Contract, bytes: bytes.get(hash) ?? 0, refs: 0 };
        this.pool.set(hash, entry);
        this.poolBytes += entry.bytes;
      }
      entry.refs += 1;
      const count = held.counts.get(hash) ?? 0;
      if (count === 0) held.bytes += entry.bytes;
      held.counts.set(hash, count + 1);
    });
  }

  private release(record: InstanceRecord): void {
    const held = this.userHeld.get(record.user);
    for (const hash of record.hashes) {
      const entry = this.pool.get(hash);
      if (!entry) continue;
      entry.refs -= 1;
      if (entry.refs <= 0) {
        this.pool.delete(hash);
        this.poolBytes -= entry.bytes;
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
      totalBytes: this.poolBytes,
      byUser: Object.fromEntries([...this.userHeld].map(([user, held]) => [user, held.bytes])),
    };
  }

  private drop(key: string): void {
    const record = this.records.get(key);
    if (!record) return;
    this.release(record);
    this.records.delete(key);
    const siblings = this.byService.get(record.service);
    siblings?.delete(key);
    if (siblings?.size === 0) this.byService.delete(record.service);
    this.maintenanceChanged(record.service);
  }

  /** Rebuilds the union; emits only on a real change of content. Returns whether the contracts changed. */
  private recompute(): boolean {
    const claims = this.claims();
    const { contracts, conflicts, refusals } = resolveOwnership(claims, this.rules);
    this.pinFirstUse(contracts, claims);
    const fingerprint = canonical(contracts);
    const changed = fingerprint !== this.unionFingerprint;
    this.union = contracts;
    this.byType = undefined;
    this.servedByService = undefined;
    this.unionFingerprint = fingerprint;
    this.reportRefusals(refusals);
    this.gate.keepOnly(new Set(contracts.map((c) => c.messageType)));
    if (canonical(conflicts) !== canonical(this.currentConflicts)) {
      this.currentConflicts = conflicts;
      this.safeEmit('conflict', this.conflicts());
    }
    if (changed) this.safeEmit('change', this.contracts());
    return changed;
  }

  /** Pins each message type served and not pinned yet to the service (and broker user) that holds it. */
  private pinFirstUse(served: readonly Contract[], claims: readonly Claim[]): void {
    const pins = this.options.firstUse;
    if (!pins) return;
    const fresh = served.filter((c) => pins.holder(c.messageType) === undefined);
    if (fresh.length === 0) return;
    const users = new Map(claims.map((c) => [instanceKey(c.service, c.contract.messageType), c.user]));
    pins.hold(
      fresh.map((c) => ({
        messageType: c.messageType,
        service: c.targetService,
        user: users.get(instanceKey(c.targetService, c.messageType)),
      })),
    );
  }

  /** One claim per service and message type (its newest instance's contract), with when the service first made it. */
  private claims(): Claim[] {
    const newest = new Map<string, { record: InstanceRecord; contract: Contract }>();
    for (const record of this.records.values()) {
      for (const contract of record.contracts) {
        const key = instanceKey(record.service, contract.messageType);
        const current = newest.get(key);
        if (!current || compareNewest(record, current.record) < 0) newest.set(key, { record, contract });
      }
    }
    for (const key of this.claimSeq.keys()) if (!newest.has(key)) this.claimSeq.delete(key);
    const claims: Claim[] = [];
    for (const [key, { record, contract }] of newest) {
      let seq = this.claimSeq.get(key);
      if (seq === undefined) this.claimSeq.set(key, (seq = ++this.seq));
      claims.push(
        record.brokerUser === undefined
          ? { service: record.service, contract, seq }
          : { service: record.service, contract, seq, user: record.brokerUser },
      );
    }
    return claims;
  }

  /**
   * Each refusal is logged once, when it first appears (a refused service re-announcing is not logged again), and
   * at most MAX_REFUSAL_LINES per rebuild: a flood of services claiming the same types would otherwise cost a line
   * per claim; the rest are counted in one line and listed by the discovery answer.
   */
  private reportRefusals(refusals: Refusal[]): void {
    const before = new Set(this.currentRefusals.map(refusalKey));
    let fresh = 0;
    for (const r of refusals) {
      if (before.has(refusalKey(r))) continue;
      fresh += 1;
      if (fresh <= MAX_REFUSAL_LINES)
        this.logger?.warn(
          `contract registry: refused ${r.messageType} from ${inert(r.service)}: ${inert(r.reason, 200)}`,
        );
    }
    if (fresh > MAX_REFUSAL_LINES)
      this.logger?.warn(
        `contract registry: refused ${fresh - MAX_REFUSAL_LINES} more claims (GET /api/discovery/contracts lists every refusal under conflicts.refused)`,
      );
    this.currentRefusals = refusals;
  }

  /** A throwing listener must not break the bus consumer that called apply(). */
  private safeEmit<K extends keyof RegistryEvents>(event: K, ...args: RegistryEvents[K]): void {
    try {
      (this.emit as (e: string, ...a: unknown[]) => boolean)(event, ...args);
    } catch (error) {
      this.logger?.warn(`contract registry: ${event} listener failed: ${errorMessage(error)}`);
    }
  }
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

function instanceKey(service: string, instanceId: string): string {
  return JSON.stringify([service, instanceId]);
}

function refusalKey(r: Refusal): string {
  return JSON.stringify([r.service, r.messageType, r.reason]);
}

function toInfo(record: InstanceRecord): InstanceInfo {
  return {
    service: record.service,
    instanceId: record.instanceId,
    lastSeen: record.lastSeen,
    leaseExpiresAt: record.leaseExpiresAt,
    messageTypes: record.contracts.map((c) => c.messageType).sort(compareText),
  };
}

function compareInfo(a: InstanceInfo, b: InstanceInfo): number {
  return compareText(a.service, b.service) || compareText(a.instanceId, b.instanceId);
}

/** Newest change first; ties by instance id so the choice never depends on Map order. */
function compareNewest(a: InstanceRecord, b: InstanceRecord): number {
  return b.changedAt - a.changedAt || b.changedSeq - a.changedSeq || compareText(a.instanceId, b.instanceId);
}
