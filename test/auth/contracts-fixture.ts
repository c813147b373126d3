import { randomBytes } from 'node:crypto';
import type { Contract } from '../../plugin/contracts/types';
import { currentRuntime, obtainRuntime } from '../../plugin/runtime';
import { resolveSettings } from '../../plugin/settings';

const RUNTIME_KEY = Symbol.for('express-gateway-plugin-contracts.runtime');

export function contract(messageType: string, extra: Partial<Contract> = {}): Contract {
  return { messageType, targetService: 'auth-tests', inputSchema: { type: 'object' }, outputSchema: {}, requiredPermissions: [], ...extra };
}

/**
 * Announces contracts into the process's runtime registry (an embedded one with its bus started, when there is none)
 * for the suite, and withdraws them (and drops a runtime it created) after it.
 */
export function withContracts(contracts: Contract[]): void {
  const service = `auth-tests-${randomBytes(4).toString('hex')}`;
  let created = false;
  before(async () => {
    created = currentRuntime() === undefined;
    const runtime = obtainRuntime(resolveSettings({ busUrl: 'embedded', writeConfig: false }));
    // A bus that is up, as in a serving gateway: with the bus down a missing handler is 503, not 404.
    if (created) await runtime.transport.start();
    // A service announces contracts for its own queue only.
    const own = contracts.map((c) => ({ ...c, targetService: service }));
    const result = runtime.registry.apply({ service, instanceId: 'i1', contracts: own, ttlMs: 600_000 });
    if (!result.accepted) throw new Error(`fixture contracts refused: ${result.reason}`);
  });
  after(() => {
    currentRuntime()?.registry.apply({ service, instanceId: 'i1', contracts: [], ttlMs: 0, withdrawn: true });
    if (created) {
      void currentRuntime()?.transport.close();
      delete (globalThis as Record<symbol, unknown>)[RUNTIME_KEY];
    }
  });
}
