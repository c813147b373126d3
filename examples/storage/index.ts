import { DatabaseError, type Database, type SqlClient } from './database';
import { openPostgres } from './postgres';
import { openPglite } from './pglite';
import { migrate } from './migrations';
import { MIGRATIONS } from './schema';
import { ServiceError } from '../../sdk';

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
    throw new DatabaseError(
      `the database at ${db.location} could not be migrated: ${String((err as Error)?.message ?? err).split('\n')[0]}`,
    );
  }
  return refusingUnstorableText(db);
}

/** PostgreSQL's codes for text it cannot store: a NUL character (invalid byte sequence), an untranslatable one. */
const UNSTORABLE_TEXT = new Set(['22021', '22P05']);

/**
 * Text PostgreSQL cannot store (a NUL character, valid in JSON) is the caller's mistake: 400 VALIDATION_ERROR
 * instead of a handler failure answered 500.
 */
function refusingUnstorableText(db: Database): Database {
  const check = <T>(work: Promise<T>): Promise<T> =>
    work.catch((err: unknown) => {
      const code = (err as { code?: unknown } | null)?.code;
      throw typeof code === 'string' && UNSTORABLE_TEXT.has(code)
        ? new ServiceError('VALIDATION_ERROR', 'Text may not contain the NUL character (U+0000)')
        : err;
    });
  return {
    location: db.location,
    close: () => db.close(),
    query: <T>(sql: string, params?: unknown[]) => check(db.query<T>(sql, params)),
    transaction: <T>(fn: (tx: SqlClient) => Promise<T>) =>
      check(
        db.transaction((tx) => fn({ query: <R>(sql: string, params?: unknown[]) => check(tx.query<R>(sql, params)) })),
      ),
  };
}
