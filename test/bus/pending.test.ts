import { expect } from 'chai';
import { PendingRequests, type PendingRequest } from '../../plugin/bus/pending';
import { GatewayError } from '../../plugin/errors/gateway-error';

interface Settled {
  at: number;
  error?: unknown;
}

/** A pending request whose settling is recorded (time since `t0` and the error, if rejected). */
function request(timeoutMs: number, t0: number, log: Map<string, Settled>, id: string): PendingRequest {
  return {
    service: 'svc',
    timeoutMs,
    resolve: () => log.set(id, { at: performance.now() - t0 }),
    reject: (error) => log.set(id, { at: performance.now() - t0, error }),
  };
}

const nap = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('bus: requests in flight and their deadlines (one timer for all)', () => {
  it('answers each request 504 at its own deadline, never before, whatever order the waits come in', async () => {
    const pending = new PendingRequests();
    const log = new Map<string, Settled>();
    const t0 = performance.now();
    pending.add('long', request(120, t0, log, 'long'));
    pending.add('short', request(30, t0, log, 'short'));
    pending.add('short2', request(30.5, t0, log, 'short2'));
    pending.add('mid', request(60, t0, log, 'mid'));
    await nap(250);
    for (const [id, wait] of [
      ['short', 30],
      ['short2', 31],
      ['mid', 60],
      ['long', 120],
    ] as const) {
      const s = log.get(id);
      expect(s, id).to.not.equal(undefined);
      expect(s!.at, id).to.be.at.least(wait);
      expect(s!.error).to.be.instanceOf(GatewayError);
      expect((s!.error as GatewayError).code).to.equal('TIMEOUT');
      expect(pending.get(id)).to.equal(undefined);
    }
    expect(log.get('short')!.at).to.be.below(log.get('long')!.at);
  });

  it('does not expire a request taken before its deadline, and keeps the later ones waiting', async () => {
    const pending = new PendingRequests();
    const log = new Map<string, Settled>();
    const t0 = performance.now();
    pending.add('a', request(40, t0, log, 'a'));
    pending.add('b', request(40, t0, log, 'b'));
    await nap(5);
    pending.add('c', request(200, t0, log, 'c'));
    expect(pending.take('a')).to.not.equal(undefined);
    expect(pending.take('a')).to.equal(undefined);
    await nap(100);
    expect(log.has('a')).to.equal(false);
    expect(log.get('b')?.error).to.be.instanceOf(GatewayError);
    expect(log.has('c')).to.equal(false);
    expect(pending.get('c')).to.not.equal(undefined);
    pending.failAll(() => new Error('closing'));
    expect((log.get('c')?.error as Error | undefined)?.message).to.equal('closing');
  });

  it('leaves no timer behind once nothing waits (a process with no request in flight can exit)', () => {
    const pending = new PendingRequests();
    const log = new Map<string, Settled>();
    const before = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    pending.add('x', request(60_000, 0, log, 'x'));
    pending.add('y', request(30_000, 0, log, 'y'));
    expect(process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length).to.equal(before + 1);
    pending.take('x');
    pending.take('y');
    expect(process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length).to.equal(before);
    pending.add('z', request(60_000, 0, log, 'z'));
    pending.failAll(() => new Error('closing'));
    expect(process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length).to.equal(before);
  });
});
