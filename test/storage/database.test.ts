import { expect } from 'chai';
import { ServiceError } from '../../sdk';
import { openDatabase } from '../../examples/storage';
import { migrate } from '../../examples/storage/migrations';
import { isUniqueViolation, DatabaseError, type Database } from '../../examples/storage/database';
import { MIGRATIONS } from '../../examples/storage/schema';
import { BACKENDS, tempDataDir } from '../support/databases';
import { freePort } from '../support/env';

const LATEST = Math.max(...MIGRATIONS.map((m) => m.version));

for (const backend of BACKENDS) {
  describe(`storage on ${backend.name}`, function () {
    this.timeout(60000);
    let fresh: Awaited<ReturnType<typeof backend.fresh>>;
    let db: Database;

    before(async () => {
      fresh = await backend.fresh();
      db = await openDatabase(fresh.settings);
    });
    after(async () => {
      await db?.close();
      await fresh?.cleanup();
    });

    it('applies the migrations at open and records their versions', async () => {
      const { rows } = await db.query<{ version: number }>('select version from schema_migrations order by version');
      expect(rows.map((r) => Number(r.version))).to.deep.equal(MIGRATIONS.map((m) => m.version));
    });

    it('applies nothing a second time', async () => {
      expect(await migrate(db, MIGRATIONS)).to.deep.equal({ applied: [], version: LATEST });
    });

    it('refuses a schema newer than the code, with a one-line error', async () => {
      await db.query('insert into schema_migrations (version, name) values ($1, $2)', [LATEST + 1, 'from the future']);
      try {
        const err = await migrate(db, MIGRATIONS).then(
          () => null,
          (e: unknown) => e,
        );
        expect(err).to.be.instanceOf(DatabaseError);
        expect((err as Error).message).to.equal(
          `the database schema is at version ${LATEST + 1}, newer than this code knows (${LATEST}); run the newer release or restore a backup`,
        );
      } finally {
        await db.query('delete from schema_migrations where version = $1', [LATEST + 1]);
      }
    });

    it('commits a transaction that resolves and rolls back one that throws', async () => {
      await db.query('create table tx_probe (n integer)');
      await db.transaction((tx) => tx.query('insert into tx_probe values ($1)', [1]));
      const err = await db
        .transaction(async (tx) => {
          await tx.query('insert into tx_probe values ($1)', [2]);
          throw new Error('abandon');
        })
        .catch((e: Error) => e);
      expect(err).to.have.property('message', 'abandon');
      const { rows } = await db.query<{ n: number }>('select n from tx_probe order by n');
      expect(rows).to.deep.equal([{ n: 1 }]);
    });

    it("refuses text with a NUL character as the caller's VALIDATION_ERROR, in a query and in a transaction", async () => {
      const refused = (work: Promise<unknown>) =>
        work.then(
          () => undefined,
          (err: unknown) => err,
        );
      for (const err of [
        await refused(db.query('select $1::text as t', ['a\u0000b'])),
        await refused(db.transaction((tx) => tx.query('select $1::text as t', ['a\u0000b']))),
      ]) {
        expect(err).to.be.instanceOf(ServiceError);
        expect((err as ServiceError).code).to.equal('VALIDATION_ERROR');
      }
      expect((await db.query<{ t: string }>('select $1::text as t', ['ab'])).rows[0]?.t).to.equal('ab');
    });

    it('enforces one email whatever its case, told apart as a unique violation', async () => {
      const insert = (id: string, email: string) =>
        db.query(
          "insert into users (user_id, email, role, created_at, updated_at) values ($1, $2, 'user', now(), now())",
          [id, email],
        );
      await insert('u-1', 'Ada@Example.com');
      const err = await insert('u-2', 'ada@example.COM').catch((e: unknown) => e);
      expect(isUniqueViolation(err, 'users_email_key')).to.equal(true);
      expect(isUniqueViolation(new Error('other'))).to.equal(false);
    });
  });
}

describe('storage errors', function () {
  this.timeout(60000);

  it('says in one line that an unreachable server is unreachable, without its credentials', async () => {
    const port = await freePort();
    const err = await openDatabase({
      databaseUrl: `postgres://admin:hunter2@127.0.0.1:${port}/app`,
      dataDir: '/nonexistent',
    }).catch((e: unknown) => e);
    expect(err).to.be.instanceOf(DatabaseError);
    const message = (err as Error).message;
    expect(message).to.match(
      new RegExp(`^database unreachable at postgres://127\\.0\\.0\\.1:${port}/app: .*ECONNREFUSED`),
    );
    expect(message).not.to.include('hunter2');
    expect(message).not.to.include('\n');
  });

  it('refuses a DATABASE_URL that is not a URL', async () => {
    const err = await openDatabase({ databaseUrl: 'not a url', dataDir: '/nonexistent' }).catch((e: unknown) => e);
    expect(err)
      .to.be.instanceOf(DatabaseError)
      .with.property('message')
      .that.match(/^DATABASE_URL is not a valid URL/);
  });

  it('lets one process at a time open an embedded data directory', async () => {
    const data = tempDataDir();
    try {
      const first = await openDatabase({ dataDir: data.dir });
      const err = await openDatabase({ dataDir: data.dir }).catch((e: unknown) => e);
      expect(err)
        .to.be.instanceOf(DatabaseError)
        .with.property(
          'message',
          `the data directory ${data.dir} is in use by this process; stop it or set DATA_DIR to another directory`,
        );
      await first.close();
      const again = await openDatabase({ dataDir: data.dir });
      await again.close();
    } finally {
      data.remove();
    }
  });
});
