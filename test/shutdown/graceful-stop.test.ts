import { expect } from 'chai';
import { GracefulStop } from '../../plugin/shutdown/graceful-stop';
import { GatewayError } from '../../plugin/errors';

describe('graceful stop: the bus waits', () => {
  it('passes results and errors through and keeps nothing of a settled wait (no growth per request)', async () => {
    const stop = new GracefulStop();
    for (let i = 0; i < 1000; i++) expect(await stop.untilStopped(Promise.resolve(i))).to.equal(i);
    const failure = new Error('upstream');
    await stop.untilStopped(Promise.reject(failure)).then(
      () => expect.fail('should reject'),
      (err) => expect(err).to.equal(failure),
    );
    expect(stop.pendingWaits).to.equal(0);
  });

  it('tracks the waits in progress only while they last', async () => {
    const stop = new GracefulStop();
    let release!: (v: string) => void;
    const waiting = stop.untilStopped(new Promise<string>((r) => (release = r)));
    expect(stop.pendingWaits).to.equal(1);
    release('done');
    expect(await waiting).to.equal('done');
    expect(stop.pendingWaits).to.equal(0);
  });

  it('answers every wait still in progress with 503 when the grace period runs out, and later ones at once', async () => {
    const stop = new GracefulStop();
    stop.log = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };
    const outcome = stop.untilStopped(new Promise<never>(() => undefined)).then(() => undefined, (e: unknown) => e);
    // A server with one request that never ends, so the grace period runs out.
    (stop as unknown as { drains: Array<{ begin(): void; idle(): Promise<void>; inFlight: number; refuseRemaining(): void; closeConnections(): void }> }).drains.push({
      begin: () => undefined, idle: () => Promise.resolve(), inFlight: 1, refuseRemaining: () => undefined, closeConnections: () => undefined,
    });
    await stop.stop(10);
    const err = await outcome;
    expect(err).to.be.instanceOf(GatewayError).and.to.include({ code: 'SERVICE_UNAVAILABLE', status: 503 });
    const late = await stop.untilStopped(Promise.resolve(1)).then(() => undefined, (e: unknown) => e);
    expect(late).to.be.instanceOf(GatewayError);
    expect(stop.pendingWaits).to.equal(0);
  });
});
