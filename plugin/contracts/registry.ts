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
import { compareInfo, Leases, toInfo, type InstanceInfo, type InstanceRecord } from './leases';
import { ContractPool, NOTHING_POOLED, type Pooled, type PooledContract, type RetainedBudget } from './pool';

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

/** Refusals logged one by one per rebuild of the union; more are counted in one line. */
const MAX_REFUSAL_LINES = 20;

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * The live set of contracts, fed by announcements. Each service instance holds a lease; the union of
 * the instances' contracts (one per message type) is what the gateway serves. `change` fires only when
 * that union's content changes, so periodic re-announcements are free. It ties four parts together: the leases
 * (leases.ts), the content-addressed pool and its byte budget (pool.ts), the ownership union (ownership.ts) and the
 * compatibility gate (compat/gate.ts).
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
  /** One record per service instance, with its lease. */
  private readonly leases = new Leases();
  /** Services every live instance of which is in maintenance → the Retry-After they answer (read per request). */
  private readonly inMaintenance = new Map<string, number>();
  private union: PooledContract[] = [];
  /** `union` by message type; rebuilt after a change. */
  private byType: Map<string, PooledContract> | undefined;
  /** `union` by target service, for the breaking-change gate; rebuilt after a change. */
  private servedByService: Map<string, Contract[]> | undefined;
  private unionFingerprint = canonical([]);
  private currentConflicts: RegistryConflict[] = [];
  private currentRefusals: Refusal[] = [];
  /** When each service first claimed each message type (JSON [service, messageType] → seq), while it still does. */
  private readonly claimSeq = new Map<string, number>();
  private seq = 0;
  private timer: NodeJS.Timeout | undefined;
  /** Every retained contract once, by content, and the retained-bytes budget. */
  private readonly pool: ContractPool;
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
    previous: (service, instanceId) => this.leases.get(service, instanceId)?.contracts,
  };

  constructor(options: RegistryOptions = {}) {
    super();
    this.options = options;
    this.now = options.now ?? Date.now;
    this.logger = options.logger;
    this.limits = limitsOf(options);
    this.pool = new ContractPool(options.budget);
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
    return this.leases.renew(service, instanceId, this.now());
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
    const pooled = validation.ok ? this.pool.intern(validation.announcement.contracts) : NOTHING_POOLED;
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
    if (announcement.withdrawn) {
      this.drop(announcement.service, announcement.instanceId);
    } else {
      this.record(announcement, user, pooled, from.userId);
    }
    return this.applied({ accepted: true });
  }

  /** Why recording the announcement would go over the retained budget (ContractPool.overBudget), or undefined. */
  private overBudget(announcement: Announcement, user: string, pooled: Pooled): string | undefined {
    if (announcement.withdrawn) return undefined;
    return this.pool.overBudget(user, pooled, this.leases.get(announcement.service, announcement.instanceId));
  }

  /**
   * Why a new service's announcement is refused whatever it holds, or undefined: known before it is read, so a flood
   * under new service names costs no validation once maxServices is reached or the total budget is all but full
   * (within one announcement, at most an eighth of it: a new service's contracts name it, so none is held already).
   */
  private refusedUnread(service: unknown, withdrawn: unknown): string | undefined {
    if (typeof service !== 'string' || withdrawn === true || this.leases.hasService(service)) return undefined;
    if (this.leases.serviceCount >= this.limits.maxServices)
      return `more than ${this.limits.maxServices} services (announcedServicesMax)`;
    const total = this.options.budget?.totalBytes;
    const retained = this.pool.totalBytes;
    if (total !== undefined && retained > total - Math.min(this.limits.maxBytes, total / 8))
      return `the gateway retains ${retained} bytes of contracts, too close to ${total} for a new service (announcementRetainedBytesTotal)`;
    return undefined;
  }

  /**
   * A new instance beyond maxInstancesPerService replaces the one of its service heard from longest ago (a crashed
   * instance never withdraws; a live one comes back on re-announcing).
   */
  private overCapacity(announcement: Announcement): string | undefined {
    if (announcement.withdrawn || this.leases.get(announcement.service, announcement.instanceId)) return undefined;
    const siblings = this.leases.instancesOf(announcement.service);
    if (!siblings) return undefined; // a new service beyond maxServices was refused unread (refusedUnread)
    if (siblings.size >= this.limits.maxInstancesPerService) {
      const stalest = [...siblings.values()].reduce((a, b) => (b.lastSeen < a.lastSeen ? b : a));
      this.drop(stalest.service, stalest.instanceId);
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
    return { contracts: this.union.length, services: this.leases.serviceCount, instances: this.leases.instanceCount };
  }

  /** Drops every instance whose lease ran out by `now`; returns the dropped instances. */
  expire(now: number = this.now()): InstanceInfo[] {
    const dropped: InstanceInfo[] = [];
    for (const record of this.leases.expired(now)) {
      dropped.push(toInfo(record));
      this.drop(record.service, record.instanceId);
    }
    if (dropped.length > 0) this.recompute();
    return dropped.sort(compareInfo);
  }

  /**
   * Gives every instance at least a whole lease from `now`: after the gateway could not hear the bus, its
   * instances get the time to be heard again before their routes go.
   */
  renewLeases(now: number = this.now()): void {
    this.leases.renewAll(now);
  }

  /** The current union, sorted by message type: the pool's frozen objects (copy one to change it). */
  contracts(): PooledContract[] {
    return [...this.union];
  }

  /**
   * The contract of a message type, read on every request: the pool's frozen object, the same one contracts() and
   * the `change` event hand out, so the hot path neither searches the list nor clones schemas; copy it to change it.
   */
  get(messageType: string): PooledContract | undefined {
    this.byType ??= new Map(this.union.map((c) => [c.messageType, c]));
    return this.byType.get(messageType);
  }

  instances(): InstanceInfo[] {
    return [...this.leases.all()].map(toInfo).sort(compareInfo);
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

  private record(announcement: Announcement, user: string, pooled: Pooled, brokerUser: string | undefined): void {
    const { hashes } = pooled;
    const now = this.now();
    const previous = this.leases.get(announcement.service, announcement.instanceId);
    const sameContracts =
      previous !== undefined &&
      previous.hashes.length === hashes.length &&
      previous.hashes.every((h, i) => h === hashes[i]);
    this.seq += 1;
    const contracts = this.pool.hold(user, pooled);
    if (previous) this.pool.release(previous);
    this.leases.keep({
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
    const soonest = this.leases.maintenanceOf(service);
    if (soonest === this.inMaintenance.get(service)) return;
    if (soonest === undefined) this.inMaintenance.delete(service);
    else this.inMaintenance.set(service, soonest);
    this.safeEmit('maintenance', service, soonest);
  }

  /** Bytes of contracts retained (each distinct contract once), in total and per budget (`broker user U`, `service S`). */
  retained(): { totalBytes: number; byUser: Record<string, number> } {
    return this.pool.retained();
  }

  /** Ends an instance's lease and gives back what its record held of the pool. */
  private drop(service: string, instanceId: string): void {
    const record = this.leases.remove(service, instanceId);
    if (!record) return;
    this.pool.release(record);
    this.maintenanceChanged(service);
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
    const users = new Map(claims.map((c) => [pairKey(c.service, c.contract.messageType), c.user]));
    pins.hold(
      fresh.map((c) => ({
        messageType: c.messageType,
        service: c.targetService,
        user: users.get(pairKey(c.targetService, c.messageType)),
      })),
    );
  }

  /** One claim per service and message type (its newest instance's contract), with when the service first made it. */
  private claims(): Claim<PooledContract>[] {
    const newest = new Map<string, { record: InstanceRecord; contract: PooledContract }>();
    for (const record of this.leases.all()) {
      for (const contract of record.contracts) {
        const key = pairKey(record.service, contract.messageType);
        const current = newest.get(key);
        if (!current || compareNewest(record, current.record) < 0) newest.set(key, { record, contract });
      }
    }
    for (const key of this.claimSeq.keys()) if (!newest.has(key)) this.claimSeq.delete(key);
    const claims: Claim<PooledContract>[] = [];
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

function refusalKey(r: Refusal): string {
  return JSON.stringify([r.service, r.messageType, r.reason]);
}

/** Newest change first; ties by instance id so the choice never depends on Map order. */
function compareNewest(a: InstanceRecord, b: InstanceRecord): number {
  return b.changedAt - a.changedAt || b.changedSeq - a.changedSeq || compareText(a.instanceId, b.instanceId);
}

/** A key for a pair of names (a service and a message type). */
function pairKey(a: string, b: string): string {
  return JSON.stringify([a, b]);
}
