import { DatabaseError, type Database } from './database';

export interface Migration {
  /** 1, 2, 3, … in order; never renumbered or edited once released (add another instead). */
  version: number;
  name: string;
  /** One statement each (the embedded backend runs one per query). */
  statements: readonly string[];
}

// Any constant: instances starting together on one server migrate one after the other.
const LOCK_KEY = 7_340_015;

/**
 * Brings the schema up to the newest migration in one transaction (PostgreSQL's DDL is transactional: a failed
 * migration leaves nothing half done), each recorded in `schema_migrations`.
 * A database migrated by newer code is refused: this code would misread what it does not know.
 */
export async function migrate(
  db: Database,
  migrations: readonly Migration[],
): Promise<{ applied: number[]; version: number }> {
  const latest = migrations.reduce((max, m) => Math.max(max, m.version), 0);
  return db.transaction(async (tx) => {
    await tx.query('select pg_advisory_xact_lock($1)', [LOCK_KEY]);
    await tx.query(`create table if not exists schema_migrations (
      version integer primary key,
      name text not null,
      applied_at timestamptz not null default now()
    )`);
    const { rows } = await tx.query<{ version: number }>('select version from schema_migrations');
    const done = new Set(rows.map((r) => Number(r.version)));
    const newest = Math.max(0, ...done);
    if (newest > latest) {
      throw new DatabaseError(
        `the database schema is at version ${newest}, newer than this code knows (${latest}); run the newer release or restore a backup`,
      );
    }
    const applied: number[] = [];
    for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
      if (done.has(m.version)) continue;
      for (const sql of m.statements) await tx.query(sql);
      await tx.query('insert into schema_migrations (version, name) values ($1, $2)', [m.version, m.name]);
      applied.push(m.version);
    }
    return { applied, version: Math.max(newest, latest) };
  });
}
