import { expect } from 'chai';
import { Pool } from 'pg';
import { PgIdempotencyStore } from '../../sdk';
import { createTestDatabase as scratchDatabase, tempDataDir } from '../support/databases';
import { openDatabase } from '../../examples/storage';
import type { Database } from '../../examples/storage/database';
import { conformance, REPLY } from './store-conformance';

describe('idempotency stores', () => {
  describe('PgIdempotencyStore (real PostgreSQL, a database of its own)', () => {
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

    it("records the answer in the caller's transaction: a rollback leaves the key running, a commit answers it", async () => {
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
      expect(await store.claim({ id, fingerprint: 'f', ttlMs: 60_000, leaseMs: 60_000 })).to.deep.equal({
        state: 'done',
        fingerprint: 'f',
        reply: REPLY,
      });
    });

    it('refuses a table name that is not a plain identifier', () => {
      expect(() => new PgIdempotencyStore(pool, { table: 'keys; DROP TABLE x' })).to.throw(/plain table name/);
    });
  });

  // The reference services' embedded default: the same store on PGlite, its table made by their migration 2.
  describe("PgIdempotencyStore (embedded PGlite, the reference services' migrations)", function () {
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

    it("records the answer in the caller's transaction: a rollback leaves the key running, a commit answers it", async () => {
      const id = { service: 's', caller: '', key: 'tx' };
      const claim = () => store.claim({ id, fingerprint: 'f', ttlMs: 60_000, leaseMs: 60_000 });
      const c = await claim();
      if (c.state !== 'claimed') throw new Error('not claimed');
      const rolledBack = await db
        .transaction(async (tx) => {
          await store.complete(id, c.token, REPLY, tx);
          throw new Error('roll back');
        })
        .then(
          () => null,
          (err: Error) => err.message,
        );
      expect(rolledBack).to.equal('roll back');
      expect((await claim()).state).to.equal('running');
      await db.transaction((tx) => store.complete(id, c.token, REPLY, tx));
      expect(await claim()).to.deep.equal({ state: 'done', fingerprint: 'f', reply: REPLY });
    });
  });
});
