import { expect } from 'chai';
import { IdempotencyClaimLost, type IdempotencyId, type IdempotencyStore } from '../../sdk';
import type { Reply } from '../../plugin/bus/transport';

export interface Subject {
  store: IdempotencyStore;
  /** Long enough that the steps of a test never outlast them by accident on a loaded machine. */
  leaseMs: number;
  ttlMs: number;
  /** Lets `ms` pass for the store's clock. */
  advance(ms: number): Promise<void>;
}

export const REPLY: Reply = { ok: true, result: { userId: 'u1' }, status: 201, location: '/api/users/u1' };

/** What every IdempotencyStore must do: run on the memory store (test:unit) and on both PostgreSQL backends. */
export function conformance(make: () => Subject): void {
  let s: Subject;
  let n = 0;
  let id: IdempotencyId;
  beforeEach(() => {
    s = make();
    id = { service: 'users-service', caller: 'alice', key: `k-${++n}` };
  });
  const claim = (fingerprint = 'f1', which = id) =>
    s.store.claim({ id: which, fingerprint, ttlMs: s.ttlMs, leaseMs: s.leaseMs });

  it('a first claim runs; a second one finds it running with its fingerprint', async () => {
    expect((await claim()).state).to.equal('claimed');
    expect(await claim('f2')).to.deep.equal({ state: 'running', fingerprint: 'f1' });
  });

  it('a completed key gives its reply and fingerprint back, as recorded', async () => {
    const c = await claim();
    if (c.state !== 'claimed') throw new Error('not claimed');
    await s.store.complete(id, c.token, REPLY);
    expect(await claim()).to.deep.equal({ state: 'done', fingerprint: 'f1', reply: REPLY });
    expect(await claim('other')).to.deep.equal({ state: 'done', fingerprint: 'f1', reply: REPLY });
  });

  it('a released key runs again; a wrong token can neither renew, complete nor release', async () => {
    const c = await claim();
    if (c.state !== 'claimed') throw new Error('not claimed');
    expect(await s.store.renew(id, 'nope', s.leaseMs)).to.equal(false);
    let lost: unknown;
    await s.store.complete(id, 'nope', REPLY).catch((err: unknown) => (lost = err));
    expect(lost).to.be.instanceOf(IdempotencyClaimLost);
    await s.store.release(id, 'nope');
    expect((await claim()).state).to.equal('running');
    expect(await s.store.renew(id, c.token, s.leaseMs)).to.equal(true);
    await s.store.release(id, c.token);
    expect((await claim()).state).to.equal('claimed');
  });

  it('a lapsed lease is taken over by the same request only; the old attempt can no longer record', async () => {
    const first = await claim();
    if (first.state !== 'claimed') throw new Error('not claimed');
    await s.advance(s.leaseMs + 50);
    expect(await claim('f2')).to.deep.equal({ state: 'running', fingerprint: 'f1' });
    const second = await claim();
    expect(second.state).to.equal('claimed');
    let lost: unknown;
    await s.store.complete(id, first.token, REPLY).catch((err: unknown) => (lost = err));
    expect(lost).to.be.instanceOf(IdempotencyClaimLost);
    if (second.state === 'claimed') await s.store.complete(id, second.token, REPLY);
    expect((await claim()).state).to.equal('done');
  });

  it('keys expire after their ttl (and are purged); another caller or service has keys of its own', async () => {
    const c = await claim();
    if (c.state !== 'claimed') throw new Error('not claimed');
    await s.store.complete(id, c.token, REPLY);
    expect((await claim('f1', { ...id, caller: 'bob' })).state).to.equal('claimed');
    expect((await claim('f1', { ...id, service: 'other-service' })).state).to.equal('claimed');
    await s.advance(s.ttlMs + 50);
    expect(await s.store.purgeExpired()).to.be.at.least(3);
    expect((await claim('f9')).state).to.equal('claimed');
  });
}
