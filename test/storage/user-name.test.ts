import { expect } from 'chai';
import { UserStore } from '../../examples/users-service/store';
import { openDatabase } from '../../examples/storage';
import type { Database } from '../../examples/storage/database';
import { BACKENDS } from '../support/databases';

/** The users store on both backends: a name made of firstName and lastName follows them, a chosen one stays. */
for (const backend of BACKENDS) {
  describe(`a user's name on ${backend.name}`, function () {
    this.timeout(60000);
    let fresh: Awaited<ReturnType<typeof backend.fresh>>;
    let db: Database;
    let store: UserStore;

    before(async () => {
      fresh = await backend.fresh();
      db = await openDatabase(fresh.settings);
      store = new UserStore(db);
    });
    after(async () => {
      await db?.close().catch(() => undefined);
      await fresh?.cleanup();
    });

    it('is recomputed when firstName or lastName changes, unless it was chosen apart from them', async () => {
      const user = await store.insert({
        email: 'name@example.com',
        firstName: 'Ada',
        lastName: 'Byron',
        name: 'Ada Byron',
        role: 'user',
        permissions: [],
      });
      expect((await store.update(user.userId, { lastName: 'Lovelace' }))!.name).to.equal('Ada Lovelace');
      expect((await store.update(user.userId, { firstName: '' }))!.name).to.equal('Lovelace');
      expect((await store.update(user.userId, { name: 'The Countess' }))!.name).to.equal('The Countess');
      expect((await store.update(user.userId, { firstName: 'Ada' }))!).to.include({
        firstName: 'Ada',
        lastName: 'Lovelace',
        name: 'The Countess',
      });

      const nameless = await store.insert({ email: 'nameless@example.com', role: 'user', permissions: [] });
      expect((await store.update(nameless.userId, { firstName: 'Grace' }))!.name).to.equal('Grace');
    });
  });
}
