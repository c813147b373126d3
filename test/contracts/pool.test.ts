import { expect } from 'chai';
import { ContractPool } from '../../plugin/contracts/pool';
import type { Contract } from '../../plugin/contracts/types';

const contract = (messageType: string): Contract => ({
  messageType,
  targetService: 'users',
  inputSchema: { type: 'object' },
  outputSchema: { type: 'object' },
  requiredPermissions: ['users:read'],
});

describe('ContractPool: each contract once, by content, within a byte budget', () => {
  it('freezes a contract as it enters, and hands that object to every holder of the same content', () => {
    const pool = new ContractPool(undefined);
    const first = pool.intern([contract('GetUserQuery')]);
    expect(Object.isFrozen(first.contracts[0])).to.equal(false);
    const [held] = pool.hold('service users', first);
    expect(Object.isFrozen(held)).to.equal(true);
    expect(Object.isFrozen(held?.inputSchema)).to.equal(true);
    const again = pool.intern([contract('GetUserQuery')]);
    expect(again.contracts[0]).to.equal(held);
    expect(pool.hold('service users', again)[0]).to.equal(held);
    expect(pool.totalBytes).to.equal(first.bytes.get(first.hashes[0] as string));
  });

  it('lets a contract go when the last holding is released', () => {
    const pool = new ContractPool(undefined);
    const pooled = pool.intern([contract('GetUserQuery')]);
    const hashes = pooled.hashes;
    pool.hold('service users', pooled);
    pool.hold('service users', pool.intern([contract('GetUserQuery')]));
    pool.release({ user: 'service users', hashes });
    expect(pool.retained().totalBytes).to.be.greaterThan(0);
    pool.release({ user: 'service users', hashes });
    expect(pool.retained()).to.deep.equal({ totalBytes: 0, byUser: {} });
    expect(pool.intern([contract('GetUserQuery')]).contracts[0]).not.to.satisfy(Object.isFrozen);
  });

  it('counts only new bytes against the budget: what a user holds already, or what the replaced holding frees, is free', () => {
    const sizes = new ContractPool(undefined).intern([contract('GetUserQuery'), contract('ListUsersQuery')]);
    // Room for either contract, not for both.
    const size = Math.max(...sizes.bytes.values());
    const pool = new ContractPool({ perUserBytes: size, totalBytes: size * 10 });
    const first = pool.intern([contract('GetUserQuery')]);
    expect(pool.overBudget('broker user a', first, undefined)).to.equal(undefined);
    pool.hold('broker user a', first);
    // The same contract again costs the user nothing; a second one is over its budget...
    expect(pool.overBudget('broker user a', pool.intern([contract('GetUserQuery')]), undefined)).to.equal(undefined);
    const other = pool.intern([contract('ListUsersQuery')]);
    expect(pool.overBudget('broker user a', other, undefined)).to.match(
      /broker user a would retain \d+ bytes of contracts, over \d+ \(announcementRetainedBytesPerUser\)/,
    );
    // ...unless it replaces what the user's instance held before.
    expect(pool.overBudget('broker user a', other, { user: 'broker user a', hashes: first.hashes })).to.equal(
      undefined,
    );
  });
});
