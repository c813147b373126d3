import type { Contract } from './types';

/*
 * A contract's deadline: what it asks for (`timeoutMs`), or the gateway's default, never more than the gateway's
 * cap — an announcement names the deadline, so it must not be able to make callers (and the gateway's memory) wait
 * for ever.
 */

export interface TimeoutSettings {
  requestTimeoutMs: number;
  maxRequestTimeoutMs: number;
}

/** The deadline the gateway keeps for `contract`'s requests, in ms. */
export function contractTimeoutMs(contract: Pick<Contract, 'timeoutMs'>, settings: TimeoutSettings): number {
  const asked = contract.timeoutMs ?? settings.requestTimeoutMs;
  return Math.min(asked, settings.maxRequestTimeoutMs);
}

/** Whether `contract` asks for more than the cap (and gets the cap). */
export function timeoutClamped(contract: Pick<Contract, 'timeoutMs'>, settings: TimeoutSettings): boolean {
  return contract.timeoutMs !== undefined && contract.timeoutMs > settings.maxRequestTimeoutMs;
}

/**
 * Says once, when a contract appears (or changes what it asks), that its timeoutMs was cut to the cap. Keyed by the
 * contracts known now, so what it remembers is bounded by them.
 */
export class TimeoutCapLog {
  private said = new Set<string>();

  constructor(
    private readonly settings: TimeoutSettings,
    private readonly warn: (message: string) => void,
  ) {}

  contractsChanged(contracts: readonly Contract[]): void {
    const now = new Set<string>();
    for (const c of contracts) {
      if (!timeoutClamped(c, this.settings)) continue;
      const key = `${c.targetService}\u0000${c.messageType}\u0000${c.timeoutMs}`;
      now.add(key);
      if (!this.said.has(key)) {
        this.warn(
          `contract ${c.messageType} of ${c.targetService} asks for timeoutMs ${c.timeoutMs}; its requests wait at most ${this.settings.maxRequestTimeoutMs} ms (maxRequestTimeoutMs)`,
        );
      }
    }
    this.said = now;
  }
}
