import { expect } from 'chai';
import { ContractRegistry } from '../../plugin/contracts/registry';
import type { Announcement } from '../../plugin/contracts/types';
import { leaseHold } from '../../plugin/contracts/lease-hold';

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

describe('leaseHold: when the expiry may drop instances', () => {
  it('holds while the gateway is deaf, renews once when it hears again, then holds only for the grace', () => {
    let hearing = true;
    let grace = 0;
    let renewed = 0;
    const held = leaseHold(
      () => hearing,
      () => grace,
      () => {
        renewed += 1;
      },
    );
    expect(held()).to.equal(false);
    hearing = false; // the bus down, or the announcement listener refused by the broker
    expect([held(), held()]).to.deep.equal([true, true]);
    expect(renewed).to.equal(0);
    hearing = true;
    grace = 500;
    expect(held()).to.equal(true); // heard again: renewed once, and the grace holds
    expect(renewed).to.equal(1);
    grace = 0;
    expect([held(), held()]).to.deep.equal([false, false]);
    expect(renewed).to.equal(1);
  });

  it('lets a registry drop an instance only once it is heard again and its renewed lease has passed', () => {
    let now = 1_000;
    let hearing = true;
    const registry = new ContractRegistry({ now: () => now });
    const held = leaseHold(
      () => hearing,
      () => 0,
      () => registry.renewLeases(),
    );
    registry.apply(announce('u1', 5_000)); // ends at 6 000
    hearing = false;
    now = 20_000; // its renewals were refused with the gateway's listener
    if (!held()) registry.expire();
    expect(registry.contracts()).to.have.length(1);
    hearing = true;
    if (!held()) registry.expire(); // renewed to 25 000 first
    expect(registry.contracts()).to.have.length(1);
    now = 25_001; // still not heard: gone
    if (!held()) registry.expire();
    expect(registry.contracts()).to.have.length(0);
  });
});
