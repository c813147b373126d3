import { DatabaseError, type Database } from './database';
import { openPostgres } from './postgres';
import { openPglite } from './pglite';
import { migrate } from './migrations';
import { MIGRATIONS } from './schema';

export { DatabaseError, isUniqueViolation, type Database, type SqlClient } from './database';
export { migrate, type Migration } from './migrations';
export { changeWithAnswer } from './answered';
export { MIGRATIONS } from './schema';

export interface StorageSettings {
  /** A PostgreSQL server (postgres://user:password@host:5432/database); the embedded database when absent. */
  databaseUrl?: string;
  /** The embedded database's directory (ignored when databaseUrl is set). */
  dataDir: string;
}

/** The database of the reference services, migrated to this code's schema; a DatabaseError says in one line why not. */
export async function openDatabase(settings: StorageSettings): Promise<Database> {
  const db = settings.databaseUrl ? await openPostgres(settings.databaseUrl) : await openPglite(settings.dataDir);
  try {
    await migrate(db, MIGRATIONS);
  } catch (err) {
    await db.close().catch(() => undefined);
    if (err instanceof DatabaseError) throw err;
    throw new DatabaseError(`the database at ${db.location} could not be migrated: ${String((err as Error)?.message ?? err).split('\n')[0]}`);
  }
  return db;
}
