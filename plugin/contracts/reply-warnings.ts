import type { Contract } from './types';

/**
 * The contracts already reported for a problem with their replies, per kind of problem: a service that keeps doing
 * it costs one line, not one per request (a re-announced contract is a new object, so it is reported again). The
 * runtime owns one (docs/design.md, "where state lives"), so two runtimes in one process report apart.
 */
export class ReplyWarnings {
  private readonly reported = new Map<string, WeakSet<Contract>>();

  /** True the first time `kind` is seen for this contract, false after. */
  first(kind: string, contract: Contract): boolean {
    let seen = this.reported.get(kind);
    if (!seen) this.reported.set(kind, (seen = new WeakSet()));
    if (seen.has(contract)) return false;
    seen.add(contract);
    return true;
  }
}
