import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { Announcement, Contract } from '../contracts/types';
import { inert } from '../log-once';
import type { Logger } from '../logger';
import { breakingOf, classifyContractChange } from './classify';
import { canonical } from '../contracts/canonical';

/** What happens to an announced change that breaks clients (the setting breakingChanges). */
export type BreakingChangeMode = 'accept' | 'warn' | 'refuse';
export const BREAKING_CHANGE_MODES: readonly BreakingChangeMode[] = ['accept', 'warn', 'refuse'];

/** A breaking change the gateway saw, as `/api/discovery/contracts` lists it. */
export interface BreakingChange {
  messageType: string;
  service: string;
  /** `accepted` (warn: now served) or `refused` (refuse: the previous version is still served). */
  outcome: 'accepted' | 'refused';
  /** sha256 (hex) of the version served before the change, and of the announced one. */
  previousHash: string;
  hash: string;
  reasons: string[];
  /** When this gateway first saw it (ISO 8601). */
  at: string;
}

/** What the registry gives the gate: the contract served now for a message type, and the previous list of an instance. */
export interface ServedView {
  served(messageType: string): Contract | undefined;
  /** Every contract served now whose targetService is `service`. */
  servedOf(service: string): Contract[];
  /** What this instance announced last time (its recorded list), if it is known. */
  previous(service: string, instanceId: string): readonly Contract[] | undefined;
}

/** Recorded and served contracts are the same objects announcement after announcement: each is hashed once. */
const hashes = new WeakMap<Contract, string>();

export function contractHash(contract: Contract): string {
  let hash = hashes.get(contract);
  if (hash === undefined) hashes.set(contract, (hash = createHash('sha256').update(canonical(contract)).digest('hex')));
  return hash;
}

/**
 * Screens announcements against what is served (docs/compatibility.md). A contract that changes what a message type's
 * clients see is classified; a breaking change is logged once and reported through `onBreaking`, then kept
 * (`warn`) or replaced by the served version (`refuse`: the announcement's other contracts still count). Only what an
 * instance changes is screened: an old instance re-announcing the version it always had is not a change.
 */
export class BreakingChangeGate {
  private readonly found = new Map<string, BreakingChange>();
  /** Changes already logged and counted (service, type, both hashes): once each, however often they come back. */
  private readonly reported = new LRUCache<string, true>({ max: 1000 });

  constructor(
    private readonly mode: BreakingChangeMode,
    private readonly logger: Pick<Logger, 'warn'> | undefined,
    private readonly onBreaking: (change: BreakingChange) => void,
    private readonly now: () => number = Date.now,
  ) {}

  /** The contracts to record for this announcement (its own, or in `refuse` mode the served ones where it breaks). */
  screen(announcement: Announcement, view: ServedView): Contract[] {
    if (this.mode === 'accept' || announcement.withdrawn) return announcement.contracts;
    const { service, instanceId } = announcement;
    const previous = view.previous(service, instanceId);
    const before = new Map((previous ?? []).map((c) => [c.messageType, c]));
    const kept: Contract[] = [];
    for (const contract of announcement.contracts) {
      const served = view.served(contract.messageType);
      if (!served || served.targetService !== service) {
        kept.push(contract);
        continue;
      }
      const hash = contractHash(contract);
      const had = before.get(contract.messageType);
      if ((had !== undefined && contractHash(had) === hash) || contractHash(served) === hash) {
        kept.push(contract);
        continue;
      }
      const reasons = this.reasonsAgainst(served, contract, hash);
      kept.push(reasons.length > 0 ? this.breaking(served, contract, hash, reasons) : contract);
      if (reasons.length === 0) this.clearRefused(contract.messageType);
    }
    const announced = new Set(announcement.contracts.map((c) => c.messageType));
    for (const served of view.servedOf(service)) {
      // An instance that never had it (a service whose instances announce different lists) removes nothing.
      if (announced.has(served.messageType) || (previous !== undefined && !before.has(served.messageType))) continue;
      const substitute = this.breaking(served, undefined, 'none', [
        `contract ${served.messageType} no longer announced (its routes go with it)`,
      ]);
      if (this.mode === 'refuse') kept.push(substitute);
    }
    return kept;
  }

  /** The breaking changes still relevant, by message type. */
  list(): BreakingChange[] {
    return [...this.found.values()]
      .map((c) => ({ ...c, reasons: [...c.reasons] }))
      .sort((a, b) => (a.messageType < b.messageType ? -1 : a.messageType > b.messageType ? 1 : 0));
  }

  /** Forgets message types no longer served. */
  keepOnly(servedTypes: ReadonlySet<string>): void {
    for (const type of this.found.keys()) if (!servedTypes.has(type)) this.found.delete(type);
  }

  /** Why `announced` breaks the clients of `served` (none: compatible); a refused change re-announced is not classified again. */
  private reasonsAgainst(served: Contract, announced: Contract, hash: string): string[] {
    const known = this.found.get(served.messageType);
    if (known && known.hash === hash && known.previousHash === contractHash(served)) return known.reasons;
    return breakingOf(classifyContractChange(served, announced)).map((c) => c.message);
  }

  /** Lists a breaking change (logged and reported once per distinct change); returns what to record in its place. */
  private breaking(served: Contract, announced: Contract | undefined, hash: string, reasons: string[]): Contract {
    const outcome = this.mode === 'refuse' ? 'refused' : 'accepted';
    const previousHash = contractHash(served);
    const known = this.found.get(served.messageType);
    if (!known || known.hash !== hash || known.previousHash !== previousHash || known.outcome !== outcome) {
      const change: BreakingChange = {
        messageType: served.messageType,
        service: served.targetService,
        outcome,
        previousHash,
        hash,
        reasons: [...reasons],
        at: new Date(this.now()).toISOString(),
      };
      this.found.set(served.messageType, change);
      this.report(change);
    }
    return outcome === 'refused' || announced === undefined ? structuredClone(served) : announced;
  }

  private report(change: BreakingChange): void {
    const key = JSON.stringify([change.service, change.messageType, change.previousHash, change.hash]);
    if (this.reported.has(key)) return;
    this.reported.set(key, true);
    const verdict =
      change.outcome === 'refused' ? 'refused; the previous version stays served' : 'accepted (breakingChanges: warn)';
    this.logger?.warn(
      `contract registry: breaking change to ${inert(change.messageType)} from ${inert(change.service)} ${verdict}: ${inert(change.reasons.join('; '), 500)}`,
    );
    this.onBreaking(change);
  }

  private clearRefused(messageType: string): void {
    if (this.found.get(messageType)?.outcome === 'refused') this.found.delete(messageType);
  }
}
