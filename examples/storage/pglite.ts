import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseError, type Database, type SqlClient } from './database';
import { lockDataDirectory } from './data-dir-lock';

/**
 * The embedded default: PostgreSQL compiled to WebAssembly (PGlite), its files in `<dataDir>/pglite`. One process
 * owns the directory (a lock file says which); PGlite runs one statement at a time and a transaction holds it.
 */
export async function openPglite(dataDir: string): Promise<Database> {
  // Owner only: the directory holds password hashes and the quick start's signing secret.
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const release = lockDataDirectory(join(dataDir, 'pglite.lock'), dataDir);
  let db: Awaited<ReturnType<typeof loadPglite>>;
  try {
    db = await loadPglite(join(dataDir, 'pglite'));
  } catch (err) {
    release();
    throw new DatabaseError(
      `the embedded database in ${dataDir} could not be opened: ${String((err as Error)?.message ?? err).split('\n')[0]}`,
    );
  }
  return {
    location: dataDir,
    query: <T>(sql: string, params?: unknown[]) => db.query<T>(sql, params),
    transaction: <T>(fn: (tx: SqlClient) => Promise<T>) =>
      db.transaction((tx) => fn({ query: <R>(sql: string, params?: unknown[]) => tx.query<R>(sql, params) })),
    async close() {
      try {
        if (!db.closed) await db.close();
      } finally {
        release();
      }
    },
  };
}

/** Loaded only here: a deployment on a PostgreSQL server never pays for the WebAssembly module. */
async function loadPglite(dir: string) {
  const { PGlite } = await import('@electric-sql/pglite');
  // PostgreSQL's default 128 MB of shared buffers is most of PGlite's memory (~315 MB resident; ~160 MB with 16 MB),
  // far more than the reference services' tables need.
  return PGlite.create(dir, { postgresqlconf: 'shared_buffers = 16MB' });
}
