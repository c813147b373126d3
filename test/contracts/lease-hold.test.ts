import { expect } from 'chai';
import { ContractRegistry } from '../../plugin/contracts/registry';
import type { Announcement } from '../../plugin/contracts/types';

function announce(instanceId: string, ttlMs: number): Announcement {
  return {
    service: 'users',
    instanceId,
    ttlMs,
    contracts: [
      {
        messageType: 'ListUsersQuery',
        targetService: 'users',
        inputSchema: { type: 'object' },
        outputSchema: {},
        requiredPermissions: ['users:read'],
      },
    ],
  };
}

describe('leases while the gateway cannot hear the bus', () => {
  it('renewLeases gives every instance a whole lease from now, and never shortens one', () => {
    let now = 1_000;
    const registry = new ContractRegistry({ now: () => now });
    registry.apply(announce('u1', 5_000)); // ends at 6 000
    now = 3_000;
    registry.apply(announce('u2', 10_000)); // ends at 13 000
    now = 9_000; // u1's lease ran out while the bus was down
    registry.renewLeases();
    expect(registry.instances().map((i) => [i.instanceId, i.leaseExpiresAt])).to.deep.equal([
      ['u1', 14_000],
      ['u2', 19_000],
    ]);
    now = 14_000;
    expect(registry.expire().map((i) => i.instanceId)).to.deep.equal(['u1']);
  });

  it('the expiry timer drops nothing while held, and drops what ran out once released', async () => {
    let now = 0;
    let held = true;
    const registry = new ContractRegistry({ now: () => now });
    registry.apply(announce('u1', 100));
    now = 200;
    registry.startExpiry(5, () => held);
    try {
      await new Promise((r) => setTimeout(r, 40));
      expect(
        registry.instances().map((i) => i.instanceId),
        'held: kept',
      ).to.deep.equal(['u1']);
      const changed = new Promise<void>((resolve) => registry.once('change', () => resolve()));
      held = false;
      await changed;
      expect(registry.instances()).to.deep.equal([]);
    } finally {
      registry.stop();
    }
  });
});
