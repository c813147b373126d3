import { expect } from 'chai';
import { startGateway } from '../support/gateway-process';
import { liveDescendants } from '../support/leak-check';

/** test/support/gateway-process.ts: a gateway that is not ready in time is stopped by the spawner itself. */
describe('startGateway whose readiness times out', function () {
  this.timeout(30_000);

  it('rejects and leaves no process behind', async () => {
    const before = new Set(liveDescendants().map((p) => p.pid));
    const err = await startGateway(
      { BUS_URL: 'embedded', START_REFERENCE_SERVICES: 'false' },
      { readyTimeoutMs: 300 },
    ).then(
      (gw) => gw.stop().then(() => undefined),
      (e: Error) => e,
    );
    expect(err?.message).to.match(/^gateway not ready in 300 ms/);
    const left = liveDescendants().filter((p) => !before.has(p.pid));
    expect(left, JSON.stringify(left)).to.deep.equal([]);
  });
});
