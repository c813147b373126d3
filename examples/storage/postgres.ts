import { Pool, type PoolClient, type QueryConfig } from 'pg';
import { requestTimeLeft, ServiceError } from '../../sdk';
import { DatabaseError, type Database, type SqlClient } from './database';

/** The longest one query (or waiting for a connection) may take when no request's deadline is nearer. */
const QUERY_TIMEOUT_MS = 15_000;
const CONNECT_TIMEOUT_MS = 5_000;
/** What a caller is told to wait before retrying while the database is away. */
const RETRY_AFTER_S = 2;

/** The server of a connection URL without its credentials, for logs and errors. */
function describeUrl(url: string): string {
  try {
    const u = new URL(url);
    return `postgres://${u.host}${u.pathname}`;
  } catch {
    throw new DatabaseError('DATABASE_URL is not a valid URL (postgres://user:password@host:5432/database)');
  }
}

/**
 * A PostgreSQL server through a pool of `pg` connections; fails with one line when it cannot be reached at start.
 * Afterwards a server that is lost, stalled or restarting never ends the process: every query is bounded by the
 * time its request has left (or QUERY_TIMEOUT_MS), and a failure to reach the server is answered 503
 * SERVICE_UNAVAILABLE with retryAfter; a connection that failed is closed, not reused, and the pool opens new ones
 * once the server is back.
 */
export async function openPostgres(url: string, opts: { max?: number } = {}): Promise<Database> {
  const location = describeUrl(url);
  const pool = new Pool({
    connectionString: url,
    max: opts.max ?? 10,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    keepAlive: true,
  });
  // A connection the server drops must not crash the process: an idle one's error comes to the pool, a checked-out
  // one's to the client, where nothing else listens (its queries fail, and that is answered).
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  try {
    await pool.query('select 1');
  } catch (err) {
    await pool.end().catch(() => undefined);
    throw new DatabaseError(`database unreachable at ${location}: ${reason(err)}`);
  }
  /** A checked-out connection, `fn` run on it, and the connection back in the pool (closed when it failed). */
  async function withClient<T>(
    fn: (run: SqlClient['query']) => Promise<T>,
    onFailure?: (run: SqlClient['query']) => Promise<unknown>,
  ): Promise<T> {
    const client = await checkout(pool);
    let broken: Error | undefined;
    const run = async <R>(sql: string, params?: unknown[]): Promise<{ rows: R[] }> => {
      // No time left: 503 without touching the connection (a transaction's rollback that cannot run closes it).
      const config: QueryConfig & { query_timeout: number } = { text: sql, values: params, query_timeout: timeLeft() };
      try {
        return (await client.query(config)) as unknown as { rows: R[] };
      } catch (err) {
        if (isUnavailable(err)) broken ??= err as Error;
        throw unavailableOr(err);
      }
    };
    try {
      return await fn(run);
    } catch (err) {
      if (onFailure && !broken) await onFailure(run).catch((e: unknown) => (broken ??= e as Error));
      throw err;
    } finally {
      client.release(broken);
    }
  }
  return {
    location,
    query: <T>(sql: string, params?: unknown[]) => withClient((run) => run<T>(sql, params)),
    transaction: <T>(fn: (tx: SqlClient) => Promise<T>) =>
      withClient(
        async (run) => {
          await run('begin');
          const out = await fn({ query: run });
          await run('commit');
          return out;
        },
        // Not after a connection failure (the server rolls back what it loses) nor when time is up: then the
        // connection is closed instead, never returned to the pool inside a transaction.
        (run) => run('rollback'),
      ),
    close: () => pool.end(),
  };
}

/**
 * Milliseconds a query may still take: what its request has left, at most QUERY_TIMEOUT_MS. A request whose time
 * is up gets its 503 now, while the gateway still waits for an answer.
 */
function timeLeft(): number {
  const left = Math.min(QUERY_TIMEOUT_MS, requestTimeLeft() ?? QUERY_TIMEOUT_MS);
  if (left < 1) throw unavailable();
  return Math.ceil(left);
}

/** A connection from the pool within the time left; one that comes later goes straight back. */
async function checkout(pool: Pool): Promise<PoolClient> {
  const wait = timeLeft();
  const connecting = pool.connect();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(unavailable()), wait);
  });
  try {
    return await Promise.race([connecting, late]);
  } catch (err) {
    connecting.then(
      (c) => c.release(),
      () => undefined,
    );
    throw unavailableOr(err);
  } finally {
    clearTimeout(timer);
  }
}

function unavailable(): ServiceError {
  return new ServiceError('SERVICE_UNAVAILABLE', 'The database is unavailable; try again shortly', {
    retryAfter: RETRY_AFTER_S,
  });
}

function unavailableOr(err: unknown): unknown {
  return isUnavailable(err) ? unavailable() : err;
}

/**
 * SQLSTATE classes that say the server cannot answer now: 08 connection exception, 53 insufficient resources (too
 * many connections), 57 operator intervention (shutting down, starting up, statement cancelled), 58 system error.
 */
const UNAVAILABLE_CLASSES = new Set(['08', '53', '57', '58']);
/** pg's own errors when a connection fails, times out or is gone (they carry no code). */
const CONNECTION_FAILED =
  /connection terminated|timeout|not queryable|client was closed|connection error|connection ended/i;

/** Whether a query failed because the server is unreachable, stalled or restarting, rather than on its content. */
export function isUnavailable(err: unknown): boolean {
  if (err instanceof ServiceError) return err.code === 'SERVICE_UNAVAILABLE';
  const e = err as { code?: unknown; message?: unknown } | null;
  if (typeof e?.code === 'string') {
    if (/^[0-9A-Z]{5}$/.test(e.code)) return UNAVAILABLE_CLASSES.has(e.code.slice(0, 2));
    return /^E[A-Z]+$/.test(e.code); // a socket's: ECONNREFUSED, ECONNRESET, EPIPE, ETIMEDOUT, …
  }
  return typeof e?.message === 'string' && CONNECTION_FAILED.test(e.message);
}

/** The driver's reason in a few words: the error code (ECONNREFUSED, 28P01, 3D000, …) and its message's first line. */
function reason(err: unknown): string {
  const e = err as { code?: string; message?: string } | null;
  const first = String(e?.message ?? err)
    .split('\n')[0]!
    .slice(0, 200);
  if (!e?.code || first.includes(e.code)) return first || 'no answer';
  return first ? `${e.code} ${first}` : e.code;
}
