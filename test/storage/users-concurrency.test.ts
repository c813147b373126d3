import { expect } from 'chai';
import { createTransport } from '../../plugin/bus';
import type { Transport } from '../../plugin/bus/transport';
import type { RunningService } from '../../sdk';
import { startUsersService } from '../../examples/users-service';
import { UserStore } from '../../examples/users-service/store';
import { openDatabase } from '../../examples/storage';
import type { Database } from '../../examples/storage/database';
import { BACKENDS } from '../support/databases';
import { AMQP_URL, uniquePrefix } from '../support/env';
import { deleteBusTopology } from '../support/broker';

/**
 * Two users-service instances consuming one queue on RabbitMQ: on PostgreSQL each has its own connection pool
 * (as two processes would), on the embedded database they share the one process's database. Concurrent creates
 * of one email, whatever its case, give exactly one user.
 */
for (const backend of BACKENDS) {
  describe(`two users-service instances on one queue and ${backend.name}`, function () {
    this.timeout(90000);
    const prefix = uniquePrefix('users2');
    let fresh: Awaited<ReturnType<typeof backend.fresh>>;
    const dbs: Database[] = [];
    const transports: Transport[] = [];
    const services: RunningService[] = [];
    let client: Transport;

    before(async () => {
      fresh = await backend.fresh();
      const first = await openDatabase(fresh.settings);
      dbs.push(first);
      // Two pools on a server; one database object in the process on the embedded backend.
      dbs.push(fresh.settings.databaseUrl ? await openDatabase(fresh.settings) : first);
      for (const db of dbs) {
        const transport = createTransport({ url: AMQP_URL, prefix });
        await transport.start();
        transports.push(transport);
        services.push(await startUsersService(transport, { store: new UserStore(db), bcryptRounds: 4 }));
      }
      client = createTransport({ url: AMQP_URL, prefix });
      await client.start();
    });
    after(async () => {
      for (const s of services) await s.stop().catch(() => undefined);
      for (const t of [...transports, client]) await t?.close().catch(() => undefined);
      for (const db of new Set(dbs)) await db.close().catch(() => undefined);
      await deleteBusTopology(AMQP_URL, prefix).catch(() => undefined);
      await fresh?.cleanup();
    });

    const create = (email: string, i: number) =>
      client.request(
        {
          messageType: 'CreateUserCommand',
          targetService: 'users-service',
          input: { email, name: `N${i}`, password: 'long-enough-1' },
          headers: { correlationId: `c${i}`, requestId: `r${i}` },
        },
        20000,
      );

    it('creates one user of 24 concurrent creates of one email; the others are RESOURCE_CONFLICT on email', async () => {
      const replies = await Promise.all(
        Array.from({ length: 24 }, (_, i) => create(i % 2 ? 'race@example.com' : 'RACE@example.com', i)),
      );
      const created = replies.filter((r) => r.ok);
      expect(created, JSON.stringify(replies.filter((r) => !r.ok || r.status !== 201))).to.have.length(1);
      expect(created[0]).to.include({ status: 201 });
      for (const r of replies.filter((x) => !x.ok)) {
        expect(r.ok ? null : r.error).to.include({ code: 'RESOURCE_CONFLICT', conflictingField: 'email' });
      }
      const { rows } = await dbs[1]!.query<{ n: number | string }>(
        "select count(*) as n from users where lower(email) = 'race@example.com'",
      );
      expect(Number(rows[0]!.n)).to.equal(1);
    });

    it('shares the users: each instance reads what the other wrote', async () => {
      const made = await Promise.all(Array.from({ length: 6 }, (_, i) => create(`shared-${i}@example.com`, 100 + i)));
      expect(made.every((r) => r.ok)).to.equal(true);
      const stores = dbs.map((db) => new UserStore(db));
      for (const r of made) {
        const userId = (r.ok ? (r.result as { userId: string }).userId : '') as string;
        for (const store of stores) expect((await store.get(userId))?.userId).to.equal(userId);
      }
    });
  });
}
