import { Pool, type PoolClient } from 'pg';
import { DatabaseError, type Database, type SqlClient } from './database';

/** The server of a connection URL without its credentials, for logs and errors. */
export function describeUrl(url: string): string {
  try {
    const u = new URL(url);
    return `postgres://${u.host}${u.pathname}`;
  } catch {
    throw new DatabaseError('DATABASE_URL is not a valid URL (postgres://user:password@host:5432/database)');
  }
}

/** A PostgreSQL server through a pool of `pg` connections; fails with one line when it cannot be reached. */
export async function openPostgres(url: string, opts: { max?: number } = {}): Promise<Database> {
  const location = describeUrl(url);
  const pool = new Pool({ connectionString: url, max: opts.max ?? 10, connectionTimeoutMillis: 5000 });
  // An idle connection the server drops must not crash the process; the next query opens another.
  pool.on('error', () => undefined);
  try {
    await pool.query('select 1');
  } catch (err) {
    await pool.end().catch(() => undefined);
    throw new DatabaseError(`database unreachable at ${location}: ${reason(err)}`);
  }
  return {
    location,
    query: <T>(sql: string, params?: unknown[]) => pool.query(sql, params) as unknown as Promise<{ rows: T[] }>,
    async transaction<T>(fn: (tx: SqlClient) => Promise<T>): Promise<T> {
      const client = await pool.connect();
      try {
        await client.query('begin');
        const out = await fn(clientOf(client));
        await client.query('commit');
        return out;
      } catch (err) {
        await client.query('rollback').catch(() => undefined);
        throw err;
      } finally {
        client.release();
      }
    },
    close: () => pool.end(),
  };
}

function clientOf(client: PoolClient): SqlClient {
  return { query: <T>(sql: string, params?: unknown[]) => client.query(sql, params) as unknown as Promise<{ rows: T[] }> };
}

/** The driver's reason in a few words: the error code (ECONNREFUSED, 28P01, 3D000, …) and its message's first line. */
function reason(err: unknown): string {
  const e = err as { code?: string; message?: string } | null;
  const first = String(e?.message ?? err).split('\n')[0]!.slice(0, 200);
  if (!e?.code || first.includes(e.code)) return first || 'no answer';
  return first ? `${e.code} ${first}` : e.code;
}
