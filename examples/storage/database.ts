/**
 * The reference services' storage: one SQL dialect (PostgreSQL) on two backends, a PostgreSQL server when
 * DATABASE_URL is set and an embedded PostgreSQL (PGlite) in a data directory otherwise.
 */

/** Anything that runs a query: the database itself or an open transaction. */
export interface SqlClient {
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<{ rows: T[] }>;
}

export interface Database extends SqlClient {
  /** Runs `fn` in one transaction: committed when it resolves, rolled back when it throws. */
  transaction<T>(fn: (tx: SqlClient) => Promise<T>): Promise<T>;
  close(): Promise<void>;
  /** Where the data is, for the start line: the server (without credentials) or the directory. */
  readonly location: string;
}

/** A one-line failure to open or migrate the database, safe to print (no credentials, no driver stack). */
export class DatabaseError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DatabaseError';
  }
}

/** SQLSTATE 23505: the row breaks a unique index (e.g. a second user with one email). */
export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  const e = err as { code?: unknown; constraint?: unknown } | null;
  return e?.code === '23505' && (constraint === undefined || e.constraint === constraint);
}
