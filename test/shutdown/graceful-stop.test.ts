import { expect } from 'chai';
import { GracefulStop } from '../../plugin/shutdown/graceful-stop';
import { GatewayError } from '../../plugin/errors/gateway-error';
import { InProcessHub } from '../../plugin/bus/inprocess/hub';
import { InProcessTransport } from '../../plugin/bus/inprocess';
import { deferred, rejection, requestFor } from '../bus/conformance';

const quiet = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

/** A stop whose grace period runs out: one request on its server never ends. */
function stopWithStuckRequest(stop: GracefulStop): void {
  stop.log = quiet;
  (
    stop as unknown as {
      drains: Array<{
        begin(): void;
        idle(): Promise<void>;
        inFlight: number;
        refuseRemaining(): void;
        closeConnections(): void;
      }>;
    }
  ).drains.push({
    begin: () => undefined,
    idle: () => Promise.resolve(),
    inFlight: 1,
    refuseRemaining: () => undefined,
    closeConnections: () => undefined,
  });
}

describe('graceful stop: the bus waits', () => {
  let hub: InProcessHub;
  let gateway: InProcessTransport;
  let service: InProcessTransport;
  beforeEach(async () => {
    hub = new InProcessHub();
    gateway = new InProcessTransport(hub);
    service = new InProcessTransport(hub);
    await gateway.start();
    await service.start();
  });
  afterEach(async () => {
    await gateway.close();
    await service.close();
  });

  it('answers every request still waiting for its reply with 503 when the grace period runs out', async () => {
    const entered = deferred();
    const release = deferred();
    await service.serve('stuck', async () => {
      entered.resolve();
      await release.promise; // past the grace period
      return { ok: true, result: 'too late' };
    });
    const waiting = rejection(gateway.request(requestFor('stuck'), 60_000));
    await entered.promise;
    const stop = new GracefulStop(() => gateway);
    stopWithStuckRequest(stop);
    expect(stop.isAborted).to.equal(false);
    await stop.stop(10);
    const err = await waiting;
    expect(err).to.be.instanceOf(GatewayError).and.to.include({ code: 'SERVICE_UNAVAILABLE', status: 503 });
    expect(err.headers['Retry-After']).to.match(/^\d+$/);
    expect(stop.isAborted, 'later requests are refused by contract-router').to.equal(true);
    release.resolve();
  });

  it('leaves the bus waits alone when no request outlived the grace period', async () => {
    const entered = deferred();
    const release = deferred();
    await service.serve('slow', async () => {
      entered.resolve();
      await release.promise;
      return { ok: true, result: { done: true } };
    });
    const waiting = gateway.request(requestFor('slow'), 60_000);
    await entered.promise;
    const stop = new GracefulStop(() => gateway);
    stop.log = quiet;
    await stop.stop(10);
    expect(stop.isAborted).to.equal(false);
    release.resolve();
    expect(await waiting).to.deep.equal({ ok: true, result: { done: true } });
  });
});
