import { PgIdempotencyStore, serve, type RunningService } from '../../sdk';
import type { Transport } from '../../plugin/bus/transport';
import {
  createUser,
  deleteUser,
  getUser,
  getUserPermissions,
  grantUserPermission,
  listUsers,
  updateUser,
} from './contracts';
import { userHandlers } from './handlers';
import type { UserStore } from './store';

export const SERVICE = 'users-service';

/** Starts the reference users service on a transport, its users in the store's database (examples/storage). */
export async function startUsersService(
  transport: Transport,
  opts: { store: UserStore; ttlMs?: number; bcryptRounds?: number },
): Promise<RunningService & { store: UserStore }> {
  const { store } = opts;
  const h = userHandlers(store, { bcryptRounds: opts.bcryptRounds });
  const running = await serve({
    transport,
    service: SERVICE,
    ttlMs: opts.ttlMs,
    // Idempotency-Key on commands: the keys in the users' database (migration 2), shared by every instance.
    idempotency: { store: new PgIdempotencyStore(store.db) },
    operations: [
      { contract: createUser, handle: h.create },
      { contract: getUser, handle: h.get },
      { contract: updateUser, handle: h.update },
      { contract: deleteUser, handle: h.delete },
      { contract: listUsers, handle: h.list },
      { contract: getUserPermissions, handle: h.permissions },
      { contract: grantUserPermission, handle: h.grant },
    ],
    onError: (err) => console.error(`[${SERVICE}] handler failed: ${err instanceof Error ? err.message : String(err)}`),
  });
  return Object.assign(running, { store });
}
