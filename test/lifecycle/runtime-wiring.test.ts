import { expect } from 'chai';
import type { Runtime } from '../../plugin/runtime';
import type { Contract, JsonSchema } from '../../plugin/contracts/types';
import type { Logger } from '../../plugin/logger';
import { createPolicies } from '../../policies';
import { contractAvailableCondition } from '../../conditions/contract-available';
import { testRuntime } from '../support/runtime';

function capture(): Logger & { errors: string[] } {
  const errors: string[] = [];
  return { errors, debug: () => undefined, info: () => undefined, warn: () => undefined, error: (m) => errors.push(m) };
}

function contract(messageType: string, inputSchema: JsonSchema): Contract {
  return {
    messageType,
    targetService: 'wiring-service',
    inputSchema,
    outputSchema: { type: 'object' },
    requiredPermissions: [],
  };
}

/** The registry's events and how many listeners each has now. */
function listenerCounts(runtime: Runtime): Record<string, number> {
  const { registry } = runtime.discovery;
  const counts: Record<string, number> = {};
  for (const event of registry.eventNames()) counts[String(event)] = registry.listenerCount(event);
  return counts;
}

/** Lets the validators' background slices (setImmediate) run. */
const slices = () => new Promise((resolve) => setTimeout(resolve, 20));

describe('runtime wiring: every listener is added when the runtime is made', () => {
  let runtime: Runtime;
  const log = capture();

  before(() => {
    runtime = testRuntime({}, log, { JWT_SECRET: 'a-test-secret-of-at-least-thirty-two-bytes' });
  });

  after(async () => runtime.close());

  it('making the policies, their steps, the condition and the documents adds no listener to the registry', () => {
    const before = listenerCounts(runtime);
    expect(before.change).to.be.greaterThan(0);
    const { services, documents } = runtime;
    for (const policy of createPolicies(services)) {
      // Each step as a generated pipeline builds it (an action naming a contract), and as a hand-written one might.
      (policy.policy as (action?: unknown) => unknown)({ messageType: 'WiringQuery' });
      (policy.policy as (action?: unknown) => unknown)({ messageType: 'WiringQuery', schema: { type: 'object' } });
    }
    contractAvailableCondition(services).handler({ messageType: 'WiringQuery' });
    documents.openApi.current();
    documents.asyncApi.current();
    services.pathTable();
    expect(listenerCounts(runtime)).to.deep.equal(before);
  });

  it('compiles a discovered contract with no schema-validation step made: a broken schema is logged at discovery', async () => {
    runtime.discovery.registry.apply({
      service: 'wiring-service',
      instanceId: 'w1',
      ttlMs: 60_000,
      contracts: [contract('CreateWiredCommand', { $ref: '#/nowhere' })],
    });
    await slices();
    expect(log.errors.join('\n')).to.contain('contract CreateWiredCommand: its inputSchema does not compile');
  });
});
