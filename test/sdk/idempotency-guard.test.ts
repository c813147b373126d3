import { expect } from 'chai';
import { MemoryIdempotencyStore, type IdempotencyStore } from '../../sdk';
import { IdempotencyGuard } from '../../sdk/idempotency/guard';
import { REPLY_MARGIN_MS, withRequestDeadline } from '../../sdk/deadline';
import { requestFingerprint } from '../../sdk/idempotency/fingerprint';
import type { Reply, RequestMessage } from '../../plugin/bus/transport';

const CREATED: Reply = { ok: true, result: { id: 'e1' }, status: 201, location: '/api/entries/e1' };
const toReply = (out: unknown): Reply => ({ ok: true, result: out });

function message(
  opts: { key?: string; input?: Record<string, unknown>; userId?: string; redelivered?: boolean } = {},
): RequestMessage {
  const m: RequestMessage = {
    messageType: 'CreateEntryCommand',
    targetService: 'ledger',
    input: opts.input ?? { name: 'a' },
    headers: { correlationId: 'c', requestId: 'r', idempotencyKey: opts.key ?? 'k1' },
  };
  if (opts.userId) m.headers.user = { userId: opts.userId, email: 'e@x.y', name: 'n', permissions: [] };
  if (opts.redelivered) m.redelivered = true;
  return m;
}

function deferred<T = void>(): { promise: Promise<T>; resolve(v: T): void } {
  let resolve!: (v: T) => void;
  return { promise: new Promise<T>((r) => (resolve = r)), resolve };
}

describe('IdempotencyGuard (SDK, memory store)', () => {
  const errors: unknown[] = [];
  const guardOn = (store: IdempotencyStore, opts: { ttlMs?: number; leaseMs?: number } = {}) =>
    new IdempotencyGuard('ledger', { store, ...opts }, (e) => errors.push(e));

  it('the fingerprint ignores key order and tells message types and inputs apart', () => {
    expect(requestFingerprint('A', { x: 1, y: { b: 2, a: 1 } })).to.equal(
      requestFingerprint('A', { y: { a: 1, b: 2 }, x: 1 }),
    );
    expect(requestFingerprint('A', { x: 1 })).not.to.equal(requestFingerprint('B', { x: 1 }));
    expect(requestFingerprint('A', { x: 1 })).not.to.equal(requestFingerprint('A', { x: '1' }));
  });

  it('a redelivered copy of a request still running waits for it and replays its answer; a client repeat gets 409', async () => {
    const guard = guardOn(new MemoryIdempotencyStore());
    let runs = 0;
    const release = deferred();
    const first = guard.run(message(), toReply, async () => {
      runs += 1;
      await release.promise;
      return CREATED;
    });
    await new Promise((r) => setImmediate(r));
    const repeat = await guard.run(message(), toReply, async () => CREATED);
    expect(repeat).to.deep.include({ ok: false });
    expect((repeat as { error: { code: string } }).error.code).to.equal('RESOURCE_CONFLICT');
    const redelivered = guard.run(message({ redelivered: true }), toReply, async () => {
      runs += 1;
      return CREATED;
    });
    release.resolve();
    expect(await first).to.deep.equal(CREATED);
    expect(await redelivered).to.deep.equal({ ...CREATED, replayed: true });
    expect(runs).to.equal(1);
  });

  it('a redelivered copy takes over the claim of an attempt that stopped renewing it (its instance died) and runs', async () => {
    const store = new MemoryIdempotencyStore();
    const dead = await store.claim({
      id: { service: 'ledger', caller: '', key: 'k1' },
      fingerprint: requestFingerprint('CreateEntryCommand', { name: 'a' }),
      ttlMs: 60_000,
      leaseMs: 50,
    });
    expect(dead.state).to.equal('claimed');
    const reply = await guardOn(store).run(message({ redelivered: true }), toReply, async () => CREATED);
    expect(reply).to.deep.equal(CREATED);
  });

  it('keys are per caller and expire after ttlMs; a store that fails answers 503 and runs nothing', async () => {
    let now = 0;
    const guard = guardOn(new MemoryIdempotencyStore(() => now), { ttlMs: 1000 });
    let runs = 0;
    const run = async (): Promise<Reply> => {
      runs += 1;
      return CREATED;
    };
    await guard.run(message(), toReply, run);
    expect(await guard.run(message(), toReply, run)).to.deep.equal({ ...CREATED, replayed: true });
    expect(await guard.run(message({ userId: 'u2' }), toReply, run)).to.deep.equal(CREATED);
    now += 1001;
    expect(await guard.run(message(), toReply, run)).to.deep.equal(CREATED);
    expect(runs).to.equal(3);

    const broken: IdempotencyStore = Object.assign(new MemoryIdempotencyStore(), {
      claim: async () => {
        throw new Error('connection refused');
      },
    });
    const refused = await guardOn(broken).run(message(), toReply, run);
    expect(refused.ok).to.equal(false);
    expect((refused as { error: { code: string } }).error.code).to.equal('SERVICE_UNAVAILABLE');
    expect(runs).to.equal(3);
    expect(String(errors.at(-1))).to.match(/connection refused/);
  });

  it('refuses a key longer than the gateway sends (it came from elsewhere on the bus) without running anything', async () => {
    let runs = 0;
    const reply = await guardOn(new MemoryIdempotencyStore()).run(
      message({ key: 'k'.repeat(256) }),
      toReply,
      async () => {
        runs += 1;
        return CREATED;
      },
    );
    expect((reply as { error: { code: string } }).error.code).to.equal('VALIDATION_ERROR');
    expect(runs).to.equal(0);
  });

  it('releases a claim it took but never heard of (the answer lost), so the retry runs at once', async () => {
    const memory = new MemoryIdempotencyStore();
    let lose = 1;
    const store: IdempotencyStore = Object.assign(Object.create(memory) as IdempotencyStore, {
      claim: async (request: Parameters<IdempotencyStore['claim']>[0]) => {
        const claim = await memory.claim(request);
        if (lose-- > 0) throw new Error('Connection terminated unexpectedly');
        return claim;
      },
    });
    let runs = 0;
    const run = async () => {
      runs += 1;
      return CREATED;
    };
    // A lease far longer than the test: only a release lets the retry run.
    const guard = guardOn(store, { leaseMs: 60_000 });
    const lost = await guard.run(message(), toReply, run);
    expect((lost as { error: object }).error).to.deep.include({ code: 'SERVICE_UNAVAILABLE', retryAfter: 1 });
    expect(await guard.run(message(), toReply, run)).to.deep.equal(CREATED);
    expect(runs).to.equal(1);
  });

  it('releases in the background a claim whose release failed, so a retry at another instance runs', async () => {
    const memory = new MemoryIdempotencyStore();
    let failures = 2;
    const flaky: IdempotencyStore = Object.assign(Object.create(memory) as IdempotencyStore, {
      release: async (id: Parameters<IdempotencyStore['release']>[0], token: string) => {
        if (failures-- > 0) throw new Error('Connection terminated unexpectedly');
        return memory.release(id, token);
      },
    });
    const unavailable: Reply = {
      ok: false,
      error: { code: 'SERVICE_UNAVAILABLE', message: 'The database is unavailable', retryAfter: 2 },
    };
    // Two instances on one store, with a lease far longer than the test: only a release frees the key.
    const first = guardOn(flaky, { leaseMs: 60_000 });
    const second = guardOn(memory, { leaseMs: 60_000 });
    expect(await first.run(message(), toReply, async () => unavailable)).to.deep.equal(unavailable);
    expect((await second.run(message(), toReply, async () => CREATED)) as { error: object }).to.have.nested.property(
      'error.code',
      'RESOURCE_CONFLICT',
    );
    await new Promise((r) => setTimeout(r, 1300));
    expect(await second.run(message(), toReply, async () => CREATED)).to.deep.equal(CREATED);
  });

  it('answers 503 before the deadline when the store does not answer, and runs nothing', async () => {
    const hanging: IdempotencyStore = Object.assign(Object.create(new MemoryIdempotencyStore()) as IdempotencyStore, {
      claim: () => new Promise<never>(() => undefined),
    });
    let runs = 0;
    const started = Date.now();
    const reply = await withRequestDeadline(Date.now() + REPLY_MARGIN_MS + 300, () =>
      guardOn(hanging).run(message(), toReply, async () => {
        runs += 1;
        return CREATED;
      }),
    );
    expect(Date.now() - started).to.be.within(250, 1000);
    expect((reply as { error: { code: string } }).error.code).to.equal('SERVICE_UNAVAILABLE');
    expect(runs).to.equal(0);
  });

  it('the memory store forgets its oldest keys beyond maxEntries', async () => {
    const store = new MemoryIdempotencyStore(Date.now, 2);
    const claim = (key: string) =>
      store.claim({ id: { service: 's', caller: '', key }, fingerprint: 'f', ttlMs: 60_000, leaseMs: 60_000 });
    await claim('a');
    await claim('b');
    await claim('c');
    expect((await claim('c')).state).to.equal('running');
    expect((await claim('a')).state, 'the oldest was forgotten').to.equal('claimed');
  });
});
