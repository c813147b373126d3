import type { Transport } from '../plugin/bus/transport';
import type { RunningService } from '../sdk';
import { startUsersService } from '../examples/users-service';
import { startAuthService } from '../examples/auth-service';
import { UserStore } from '../examples/users-service/store';
import { openDatabase, type StorageSettings } from '../examples/storage';
import type { Database } from '../examples/storage/database';
import { describeStorage } from './storage-settings';
import { seedAdmin, type SeedAdminOptions } from './seed-admin';

export interface ReferenceStack {
  services: RunningService[];
  db: Database;
  /** Stops the services (requests in flight finish), then closes the database. */
  stop(): Promise<void>;
}

/**
 * The reference services' database, migrated. Opened before anything waits for the bus, so an unreachable
 * database or a schema newer than the code stops the start at once, whatever the broker is doing.
 */
export async function openReferenceDatabase(storage: StorageSettings, log: (line: string) => void): Promise<Database> {
  const db = await openDatabase(storage);
  log(`reference services' data: ${describeStorage(storage, db.location)}`);
  return db;
}

/** The users and auth services on one database, with the first administrator seeded. Closes the database if they fail. */
export async function startReferenceStack(
  transport: Transport,
  db: Database,
  seed: SeedAdminOptions,
): Promise<ReferenceStack> {
  try {
    const store = new UserStore(db);
    await seedAdmin(store, seed);
    const services = [await startUsersService(transport, { store }), await startAuthService(transport, { db, store })];
    return {
      services,
      db,
      async stop() {
        for (const s of services) await s.stop().catch(() => undefined);
        await db.close().catch(() => undefined);
      },
    };
  } catch (err) {
    await db.close().catch(() => undefined);
    throw err;
  }
}
