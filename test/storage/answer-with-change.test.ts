import { expect } from 'chai';
import { userHandlers } from '../../examples/users-service/handlers';
import { UserStore } from '../../examples/users-service/store';
import { openDatabase } from '../../examples/storage';
import type { Database } from '../../examples/storage/database';
import { PgIdempotencyStore, type HandlerContext, type IdempotencyId } from '../../sdk';
import { BACKENDS } from '../support/databases';

/**
 * The reference users service writes a user and its idempotency answer in one transaction: a crash after the answer
 * is recorded but before the commit leaves neither (a retry runs the create once more), a commit leaves both.
 */
for (const backend of BACKENDS) {
  describe(`a keyed create's user and answer commit together on ${backend.name}`, function () {
    this.timeout(60000);
    let fresh: Awaited<ReturnType<typeof backend.fresh>>;
    let db: Database;
    let keys: PgIdempotencyStore;
    let h: ReturnType<typeof userHandlers>;

    before(async () => {
      fresh = await backend.fresh();
      db = await openDatabase(fresh.settings);
      keys = new PgIdempotencyStore(db);
      h = userHandlers(new UserStore(db), { bcryptRounds: 4 });
    });
    after(async () => {
      await db?.close();
      await fresh?.cleanup();
    });

    /** A claimed key's context, as the SDK gives it; `crash` fails the handler right after its answer is recorded. */
    async function keyed(key: string, crash: boolean): Promise<{ ctx: HandlerContext; id: IdempotencyId }> {
      const id = { service: 'users-service', caller: 'admin', key };
      const claim = await keys.claim({ id, fingerprint: 'f', ttlMs: 60_000, leaseMs: 60_000 });
      if (claim.state !== 'claimed') throw new Error(`not claimed: ${claim.state}`);
      const record = async (client: Parameters<PgIdempotencyStore['complete']>[3], out: unknown) => {
        await keys.complete(id, claim.token, { ok: true, result: out, status: 201 }, client);
        if (crash) throw new Error('the process died after recording the answer');
      };
      return { ctx: { correlationId: 'c', requestId: 'r', idempotency: { key, caller: id.caller, record } }, id };
    }
    const users = async (email: string) =>
      Number(
        (await db.query<{ n: number | string }>('select count(*) as n from users where email = $1', [email])).rows[0]!
          .n,
      );
    const answers = async (key: string) =>
      (await db.query<{ reply: unknown }>('select reply from idempotency_keys where key = $1', [key])).rows.map(
        (r) => r.reply,
      );

    it('a failure after the answer is recorded leaves neither the user nor the answer', async () => {
      const { ctx } = await keyed('crash-1', true);
      const err = await Promise.resolve(h.create({ email: 'crash@example.com', password: 'long-enough-1' }, ctx)).then(
        () => null,
        (e: Error) => e.message,
      );
      expect(err).to.equal('the process died after recording the answer');
      expect(await users('crash@example.com')).to.equal(0);
      // The claim is still running (the SDK would release it or let its lease lapse), with no answer.
      expect(await answers('crash-1')).to.deep.equal([null]);
    });

    it('a create that commits leaves the user and its answer, naming that user', async () => {
      const { ctx } = await keyed('ok-1', false);
      await h.create({ email: 'kept@example.com', password: 'long-enough-1' }, ctx);
      expect(await users('kept@example.com')).to.equal(1);
      const [reply] = (await answers('ok-1')) as {
        ok: boolean;
        status: number;
        result: { result: { email: string } };
      }[];
      expect(reply).to.include({ ok: true, status: 201 });
      expect(JSON.stringify(reply)).to.include('kept@example.com');
    });

    it('a conflict records no answer of its own (the SDK keeps the 409 afterwards)', async () => {
      const { ctx } = await keyed('dup-1', false);
      const err = await Promise.resolve(h.create({ email: 'KEPT@example.com' }, ctx)).then(
        () => null,
        (e: { code?: string }) => e.code,
      );
      expect(err).to.equal('RESOURCE_CONFLICT');
      expect(await answers('dup-1')).to.deep.equal([null]);
    });
  });
}
