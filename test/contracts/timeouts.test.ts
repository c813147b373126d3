import { expect } from 'chai';
import { contractTimeoutMs, TimeoutCapLog, timeoutClamped } from '../../plugin/contracts/timeouts';
import { discoveryListing } from '../../plugin/operations/discovery';
import { resolveSettings } from '../../plugin/settings';
import { waitMs, MAX_WAIT_MS } from '../../plugin/bus/pending';
import type { Contract } from '../../plugin/contracts/types';
import { planRoutes } from '../../plugin/contracts/route-plan';

const contract = (messageType: string, timeoutMs?: number): Contract => ({
  messageType,
  targetService: 'svc',
  inputSchema: {},
  outputSchema: {},
  requiredPermissions: [],
  ...(timeoutMs !== undefined ? { timeoutMs } : {}),
});

describe("a contract's deadline (maxRequestTimeoutMs)", () => {
  const settings = { requestTimeoutMs: 30_000, maxRequestTimeoutMs: 60_000 };

  it('keeps what the contract asks up to the cap, the default without one, and cuts the rest to the cap', () => {
    expect(contractTimeoutMs(contract('A', 5000), settings)).to.equal(5000);
    expect(contractTimeoutMs(contract('A'), settings)).to.equal(30_000);
    expect(contractTimeoutMs(contract('A', 60_000), settings)).to.equal(60_000);
    expect(contractTimeoutMs(contract('A', 1e12), settings)).to.equal(60_000);
    expect(timeoutClamped(contract('A', 1e12), settings)).to.equal(true);
    expect(timeoutClamped(contract('A', 60_000), settings)).to.equal(false);
    expect(timeoutClamped(contract('A'), settings)).to.equal(false);
  });

  it('defaults to 60000, or requestTimeoutMs when that is larger; MAX_REQUEST_TIMEOUT_MS sets it', () => {
    expect(resolveSettings({}, {}).maxRequestTimeoutMs).to.equal(60_000);
    expect(resolveSettings({}, { REQUEST_TIMEOUT_MS: '120000' }).maxRequestTimeoutMs).to.equal(120_000);
    expect(resolveSettings({}, { MAX_REQUEST_TIMEOUT_MS: '5000' }).maxRequestTimeoutMs).to.equal(5000);
    expect(
      resolveSettings({ maxRequestTimeoutMs: 7000 }, { MAX_REQUEST_TIMEOUT_MS: '5000' }).maxRequestTimeoutMs,
    ).to.equal(7000);
  });

  it('says so once per contract while it is known, again when it comes back', () => {
    const lines: string[] = [];
    const log = new TimeoutCapLog(settings, (l) => lines.push(l));
    log.contractsChanged([contract('Slow', 1e12), contract('Fine', 100)]);
    log.contractsChanged([contract('Slow', 1e12), contract('Fine', 100), contract('Other')]);
    expect(lines).to.deep.equal([
      'contract Slow of svc asks for timeoutMs 1000000000000; its requests wait at most 60000 ms (maxRequestTimeoutMs)',
    ]);
    log.contractsChanged([]);
    log.contractsChanged([contract('Slow', 1e12)]);
    expect(lines).to.have.length(2);
  });

  it('shows the effective deadline in the discovery listing, and whether it was cut', () => {
    const listing = discoveryListing(
      planRoutes([contract('GetThingQuery', 1e12), contract('ListThingsQuery')]),
      [],
      [],
      [],
      settings,
    );
    const [get, list] = listing.contracts;
    expect(get).to.include({ timeoutMs: 1e12, effectiveTimeoutMs: 60_000, timeoutClamped: true });
    expect(list).to.include({ effectiveTimeoutMs: 30_000 });
    expect(list).to.not.have.property('timeoutClamped');
  });

  it('turns any timeout into a timer delay and an expiration both take as they are', () => {
    expect(waitMs(1e12)).to.equal(MAX_WAIT_MS);
    expect(waitMs(Infinity)).to.equal(MAX_WAIT_MS);
    expect(waitMs(1.2)).to.equal(2);
    for (const t of [NaN, 0, -1]) expect(waitMs(t)).to.equal(1);
    expect(MAX_WAIT_MS).to.be.below(2 ** 32 - 1); // RabbitMQ's cap on expiration
  });
});
