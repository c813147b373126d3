import { randomBytes } from 'node:crypto';
import type { Contract } from '../../plugin/contracts/types';
import type { Runtime } from '../../plugin/runtime';
import { testRuntime } from '../support/runtime';

export function contract(messageType: string, extra: Partial<Contract> = {}): Contract {
  return {
    messageType,
    targetService: 'auth-tests',
    inputSchema: { type: 'object' },
    outputSchema: {},
    requiredPermissions: [],
    ...extra,
  };
}

/**
 * A runtime of the suite's own with these contracts in its registry and its bus started, made before the suite and
 * closed after it. Returns the runtime (for the policy factories) once the suite runs.
 */
export function withContracts(contracts: Contract[]): () => Runtime {
  const service = `auth-tests-${randomBytes(4).toString('hex')}`;
  let runtime: Runtime | undefined;
  before(async () => {
    const created = testRuntime();
    runtime = created;
    // A bus that is up, as in a serving gateway: with the bus down a missing handler is 503, not 404.
    await created.services.transport.start();
    // A service announces contracts for its own queue only.
    const own = contracts.map((c) => ({ ...c, targetService: service }));
    const result = created.discovery.registry.apply({ service, instanceId: 'i1', contracts: own, ttlMs: 600_000 });
    if (!result.accepted) throw new Error(`fixture contracts refused: ${result.reason}`);
  });
  after(async () => {
    await runtime?.close();
    runtime = undefined;
  });
  return () => {
    if (!runtime) throw new Error('withContracts: the runtime exists only while its suite runs');
    return runtime;
  };
}
