import { expect } from 'chai';
import { Pool } from 'pg';
import { IdempotencyClaimLost, MemoryIdempotencyStore, PgIdempotencyStore, type IdempotencyId, type IdempotencyStore } from '../../sdk';
import type { Reply } from '../../plugin/bus/transport';
import { createTestDatabase as scratchDatabase, tempDataDir } from '../support/databases';
import { openDatabase, type Database } from '../../examples/storage';

interface Subject {
  store: IdempotencyStore;
  /** Long enough that the steps of a test never outlast them by accident on a loaded machine. */
  leaseMs: number;
  ttlMs: number;
  /** Lets `ms` pass for the store's clock. */
  advance(ms: number): Promise<void>;
}

const REPLY: Reply = { ok: true, result: { userId: 'u1' }, status: 201, location: '/api/users/u1' };

function conformance(make: () => Subject): void {
  let s: Subject;
  let n = 0;
  let id: IdempotencyId;
  beforeEach(() => {
    s = make();
    id = { service: 'users-service', caller: 'alice', key: `k-${++n}` };
  });
  const claim = (fingerprint = 'f1', which = id) => s.store.claim({ id: which, fingerprint, ttlMs: s.ttlMs, leaseMs: s.leaseMs });

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

describe('idempotency stores', () => {
  describe('MemoryIdempotencyStore', () => {
    conformance(() => {
      let now = 1_000_000;
      return {
        store: new MemoryIdempotencyStore(() => now),
        leaseMs: 200,
        ttlMs: 400,
        advance: async (ms) => {
          now += ms;
        },
      };
    });
  });

  describe('PgIdempotencyStore (real PostgreSQL, a database of its own)', function () {
    let db: Awaited<ReturnType<typeof scratchDatabase>> | undefined;
    let pool: Pool;
    let store: PgIdempotencyStore;
    before(async () => {
      db = await scratchDatabase('idem');
      pool = new Pool({ connectionString: db.url, max: 4 });
      // The forced drop after the suite ends idle connections; an idle client's error must not be uncaught.
      pool.on('error', () => undefined);
      store = new PgIdempotencyStore(pool);
      await store.migrate();
      await store.migrate(); // a second run changes nothing
    });
    after(async () => {
      await pool?.end();
      await db?.drop();
    });
    conformance(() => ({ store, leaseMs: 1000, ttlMs: 3000, advance: (ms) => new Promise((r) => setTimeout(r, ms)) }));

    it('records the answer in the caller\'s transaction: a rollback leaves the key running, a commit answers it', async () => {
      const id = { service: 's', caller: '', key: 'tx' };
      const c = await store.claim({ id, fingerprint: 'f', ttlMs: 60_000, leaseMs: 60_000 });
      if (c.state !== 'claimed') throw new Error('not claimed');
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        await store.complete(id, c.token, REPLY, client);
        await client.query('ROLLBACK');
        expect((await store.claim({ id, fingerprint: 'f', ttlMs: 60_000, leaseMs: 60_000 })).state).to.equal('running');
        await client.query('BEGIN');
        await store.complete(id, c.token, REPLY, client);
        await client.query('COMMIT');
      } finally {
        client.release();
      }
      expect(await store.claim({ id, fingerprint: 'f', ttlMs: 60_000, leaseMs: 60_000 })).to.deep.equal({ state: 'done', fingerprint: 'f', reply: REPLY });
    });

    it('refuses a table name that is not a plain identifier', () => {
      expect(() => new PgIdempotencyStore(pool, { table: 'keys; DROP TABLE x' })).to.throw(/plain table name/);
    });
  });

  // The reference services' embedded default: the same store on PGlite, its table made by their migration 2.
  describe('PgIdempotencyStore (embedded PGlite, the reference services\' migrations)', function () {
    this.timeout(60000);
    let data: ReturnType<typeof tempDataDir>;
    let db: Database;
    let store: PgIdempotencyStore;
    before(async () => {
      data = tempDataDir('idem');
      db = await openDatabase({ dataDir: data.dir });
      store = new PgIdempotencyStore(db);
      await store.migrate(); // already there: changes nothing
    });
    after(async () => {
      await db?.close();
      data?.remove();
    });
    conformance(() => ({ store, leaseMs: 1000, ttlMs: 3000, advance: (ms) => new Promise((r) => setTimeout(r, ms)) }));

    it('records the answer in the caller\'s transaction: a rollback leaves the key running, a commit answers it', async () => {
      const id = { service: 's', caller: '', key: 'tx' };
      const claim = () => store.claim({ id, fingerprint: 'f', ttlMs: 60_000, leaseMs: 60_000 });
      const c = await claim();
      if (c.state !== 'claimed') throw new Error('not claimed');
      const rolledBack = await db
        .transaction(async (tx) => {
          await store.complete(id, c.token, REPLY, tx);
          throw new Error('roll back');
        })
        .then(() => null, (err: Error) => err.message);
      expect(rolledBack).to.equal('roll back');
      expect((await claim()).state).to.equal('running');
      await db.transaction((tx) => store.complete(id, c.token, REPLY, tx));
      expect(await claim()).to.deep.equal({ state: 'done', fingerprint: 'f', reply: REPLY });
    });
  });
});
