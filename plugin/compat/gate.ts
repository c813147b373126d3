import { createHash } from 'node:crypto';
import type { Announcement, Contract } from '../contracts/types';
import { inert } from '../log-once';
import { breakingOf, classifyContractChange, type ContractChange } from './classify';
import { canonical } from './schema-diff';

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

export interface GateLogger {
  warn(message: string): void;
}

/** What the registry gives the gate: the contract served now for a message type, and the previous list of an instance. */
export interface ServedView {
  served(messageType: string): Contract | undefined;
  /** Every contract served now whose targetService is `service`. */
  servedOf(service: string): Contract[];
  /** What this instance announced last time (its recorded list), if it is known. */
  previous(service: string, instanceId: string): readonly Contract[] | undefined;
}

export function contractHash(contract: Contract): string {
  return createHash('sha256').update(canonical(contract)).digest('hex');
}

const REMOVED_RULE = 'contract-removed';

/**
 * Screens announcements against what is served (docs/compatibility.md). A contract that changes what a message type's
 * clients see is classified; a breaking change is logged once and reported through `onBreaking`, then kept
 * (`warn`) or replaced by the served version (`refuse`: the announcement's other contracts still count). Only what an
 * instance changes is screened: an old instance re-announcing the version it always had is not a change.
 */
export class BreakingChangeGate {
  private readonly found = new Map<string, BreakingChange>();

  constructor(
    private readonly mode: BreakingChangeMode,
    private readonly logger: GateLogger | undefined,
    private readonly onBreaking: (change: BreakingChange) => void,
    private readonly now: () => number = Date.now,
  ) {}

  /** The contracts to record for this announcement (its own, or in `refuse` mode the served ones where it breaks). */
  screen(announcement: Announcement, view: ServedView): Contract[] {
    if (this.mode === 'accept' || announcement.withdrawn) return announcement.contracts;
    const { service, instanceId } = announcement;
    const previous = view.previous(service, instanceId);
    const before = new Map((previous ?? []).map((c) => [c.messageType, contractHash(c)]));
    const kept: Contract[] = [];
    for (const contract of announcement.contracts) {
      const served = view.served(contract.messageType);
      const hash = contractHash(contract);
      if (!served || served.targetService !== service || before.get(contract.messageType) === hash || contractHash(served) === hash) {
        kept.push(contract);
        continue;
      }
      const breaking = breakingOf(classifyContractChange(served, contract));
      kept.push(breaking.length > 0 ? this.found1(served, contract, hash, breaking) : contract);
      if (breaking.length === 0) this.clearRefused(contract.messageType);
    }
    const announced = new Set(announcement.contracts.map((c) => c.messageType));
    for (const served of view.servedOf(service)) {
      if (announced.has(served.messageType) || (previous !== undefined && !previous.some((c) => c.messageType === served.messageType))) continue;
      const removal: ContractChange = { messageType: served.messageType, class: 'breaking', rule: REMOVED_RULE, at: served.messageType, message: `contract ${served.messageType} no longer announced (its routes go with it)` };
      const substitute = this.found1(served, undefined, 'none', [removal]);
      if (this.mode === 'refuse') kept.push(substitute);
    }
    return kept;
  }

  /** The breaking changes still relevant, by message type. */
  list(): BreakingChange[] {
    return [...this.found.values()].map((c) => ({ ...c, reasons: [...c.reasons] })).sort((a, b) => (a.messageType < b.messageType ? -1 : a.messageType > b.messageType ? 1 : 0));
  }

  /** Forgets message types no longer served. */
  keepOnly(servedTypes: ReadonlySet<string>): void {
    for (const type of this.found.keys()) if (!servedTypes.has(type)) this.found.delete(type);
  }

  /** Records (once per distinct change) and returns what to keep: the announced contract, or the served one. */
  private found1(served: Contract, announced: Contract | undefined, hash: string, breaking: ContractChange[]): Contract {
    const outcome = this.mode === 'refuse' ? 'refused' : 'accepted';
    const previousHash = contractHash(served);
    const known = this.found.get(served.messageType);
    if (!known || known.hash !== hash || known.previousHash !== previousHash || known.outcome !== outcome) {
      const change: BreakingChange = { messageType: served.messageType, service: served.targetService, outcome, previousHash, hash, reasons: breaking.map((c) => c.message), at: new Date(this.now()).toISOString() };
      this.found.set(served.messageType, change);
      const verdict = outcome === 'refused' ? 'refused; the previous version stays served' : 'accepted (breakingChanges: warn)';
      this.logger?.warn(`contract registry: breaking change to ${inert(served.messageType)} from ${inert(served.targetService)} ${verdict}: ${inert(change.reasons.join('; '), 500)}`);
      this.onBreaking(change);
    }
    return outcome === 'refused' || announced === undefined ? structuredClone(served) : announced;
  }

  private clearRefused(messageType: string): void {
    if (this.found.get(messageType)?.outcome === 'refused') this.found.delete(messageType);
  }
}
