import { expect } from 'chai';
import { userHandlers } from '../../examples/users-service/handlers';
import { UserStore } from '../../examples/users-service/store';
import { openDatabase } from '../../examples/storage';
import type { Database } from '../../examples/storage/database';
import type { HandlerContext } from '../../sdk';
import { seedAdmin } from '../../scripts/seed-admin';
import { BACKENDS } from '../support/databases';

const ADMIN_CTX: HandlerContext = {
  correlationId: 'c',
  requestId: 'r',
  user: { userId: 'caller', email: 'caller@example.com', name: 'Caller', permissions: ['admin:all'] },
};

/** The code a handler call fails with, or 'ok'. */
const outcome = (p: Promise<unknown>): Promise<string> =>
  p.then(
    () => 'ok',
    (e: { code?: string; message?: string }) => e.code ?? String(e.message),
  );

/**
 * The reference users service never leaves an instance without an account holding admin:all: deleting the last
 * administrator, or taking its role, is refused with POLICY_VIOLATION; a start with none makes ADMIN_EMAIL one again.
 */
for (const backend of BACKENDS) {
  describe(`the last administrator on ${backend.name}`, function () {
    this.timeout(60000);
    let fresh: Awaited<ReturnType<typeof backend.fresh>>;
    let db: Database;
    let store: UserStore;
    let h: ReturnType<typeof userHandlers>;
    let lines: string[];
    const seed = (env: NodeJS.ProcessEnv) =>
      seedAdmin(store, { dataDir: fresh.settings.dataDir, log: (l) => lines.push(l) }, env);
    const admins = async () =>
      (await db.query<{ email: string }>("select email from users where role = 'admin' order by email")).rows.map(
        (r) => r.email,
      );
    const make = async (email: string, role: 'user' | 'admin') =>
      (await store.insert({ email, role, permissions: [] })).userId;

    beforeEach(async () => {
      fresh = await backend.fresh();
      db = await openDatabase(fresh.settings);
      store = new UserStore(db);
      h = userHandlers(store, { bcryptRounds: 4 });
      lines = [];
    });
    afterEach(async () => {
      await db?.close();
      await fresh?.cleanup();
    });

    it('deleting the only administrator is POLICY_VIOLATION, saying why; with two, one may go', async () => {
      const first = await make('first@example.com', 'admin');
      const err = await Promise.resolve(h.delete({ userId: first }, ADMIN_CTX)).catch((e: Error) => e);
      expect(err).to.include({ code: 'POLICY_VIOLATION' });
      expect((err as Error).message).to.include('last account holding admin:all');
      const second = await make('second@example.com', 'admin');
      expect(await outcome(h.delete({ userId: first }, ADMIN_CTX))).to.equal('ok');
      expect(await outcome(h.delete({ userId: second }, ADMIN_CTX))).to.equal('POLICY_VIOLATION');
      expect(await admins()).to.deep.equal(['second@example.com']);
      // Anyone else still goes, and an unknown user is still 404.
      const plain = await make('plain@example.com', 'user');
      expect(await outcome(h.delete({ userId: plain }, ADMIN_CTX))).to.equal('ok');
      expect(await outcome(h.delete({ userId: 'nobody' }, ADMIN_CTX))).to.equal('NOT_FOUND');
    });

    it("taking the only administrator's role is POLICY_VIOLATION, unless admin:all is granted apart", async () => {
      const only = await make('only@example.com', 'admin');
      expect(await outcome(h.update({ userId: only, role: 'user' }, ADMIN_CTX))).to.equal('POLICY_VIOLATION');
      expect(await admins()).to.deep.equal(['only@example.com']);
      // Other changes to it go through.
      expect(await outcome(h.update({ userId: only, name: 'Still Admin' }, ADMIN_CTX))).to.equal('ok');
      await h.grant({ userId: only, permission: 'admin:all' }, ADMIN_CTX);
      expect(await outcome(h.update({ userId: only, role: 'user' }, ADMIN_CTX))).to.equal('ok');
      // Now it holds admin:all by grant alone, so it is the last administrator and cannot be deleted.
      expect(await outcome(h.delete({ userId: only }, ADMIN_CTX))).to.equal('POLICY_VIOLATION');
    });

    it('a start with no account holding admin:all gives ADMIN_EMAIL the admin role again, in one line', async () => {
      const admin = await make('admin@example.com', 'admin');
      await db.query("update users set role = 'user' where user_id = $1", [admin]);
      await seed({ ADMIN_EMAIL: 'admin@example.com' });
      expect(await admins()).to.deep.equal(['admin@example.com']);
      expect(lines).to.deep.equal([
        'no account held admin:all: admin@example.com (ADMIN_EMAIL) has the admin role again',
      ]);
      // With an administrator left, a start changes nobody's role.
      await make('other@example.com', 'admin');
      await db.query("update users set role = 'user' where user_id = $1", [admin]);
      lines = [];
      await seed({ ADMIN_EMAIL: 'admin@example.com' });
      expect(await admins()).to.deep.equal(['other@example.com']);
      expect(lines).to.deep.equal([]);
    });

    it('a start after the administrator was deleted makes it again, in one line', async () => {
      const admin = await make('admin@example.com', 'admin');
      await make('someone@example.com', 'user');
      await db.query('delete from users where user_id = $1', [admin]);
      await seed({ ADMIN_EMAIL: 'admin@example.com', ADMIN_PASSWORD: 'long-enough-1' });
      expect(await admins()).to.deep.equal(['admin@example.com']);
      expect(lines).to.deep.equal(['no account held admin:all: administrator admin@example.com (ADMIN_EMAIL) created']);
    });

    it('ADMIN_PASSWORD_RESET=true gives the admin role back with the password', async () => {
      const admin = await make('admin@example.com', 'admin');
      await make('other@example.com', 'admin');
      await db.query("update users set role = 'user' where user_id = $1", [admin]);
      await seed({ ADMIN_EMAIL: 'admin@example.com', ADMIN_PASSWORD: 'long-enough-1', ADMIN_PASSWORD_RESET: 'true' });
      expect(await admins()).to.deep.equal(['admin@example.com', 'other@example.com']);
      expect(lines).to.have.length(1);
      expect(lines[0]).to.include('password set from ADMIN_PASSWORD').and.include('the admin role given back');
    });
  });
}

describe('two administrators deleting each other at once on PostgreSQL', function () {
  this.timeout(60000);
  const backend = BACKENDS.find((b) => b.name === 'PostgreSQL')!;
  let fresh: Awaited<ReturnType<typeof backend.fresh>>;
  const dbs: Database[] = [];

  before(async () => {
    fresh = await backend.fresh();
    // Two pools, as two instances of the service would have.
    dbs.push(await openDatabase(fresh.settings), await openDatabase(fresh.settings));
  });
  after(async () => {
    for (const db of dbs) await db.close().catch(() => undefined);
    await fresh?.cleanup();
  });

  it('leaves one: the other change waits for the first and is refused', async () => {
    for (let round = 0; round < 5; round++) {
      const store = new UserStore(dbs[0]!);
      const a = (await store.insert({ email: `a${round}@example.com`, role: 'admin', permissions: [] })).userId;
      const b = (await store.insert({ email: `b${round}@example.com`, role: 'admin', permissions: [] })).userId;
      const [h1, h2] = dbs.map((db) => userHandlers(new UserStore(db), { bcryptRounds: 4 }));
      // One deletes, the other takes the role: either order must leave one administrator.
      const results = await Promise.all([
        outcome(h1!.delete({ userId: a }, ADMIN_CTX)),
        outcome(h2!.update({ userId: b, role: 'user' }, ADMIN_CTX)),
      ]);
      expect(results.sort()).to.deep.equal(['POLICY_VIOLATION', 'ok']);
      const { rows } = await dbs[0]!.query<{ n: number | string }>(
        "select count(*) as n from users where role = 'admin'",
      );
      expect(Number(rows[0]!.n)).to.equal(1);
      // Each round starts with no administrator but its own two.
      await dbs[0]!.query('delete from users');
    }
  });
});
