import { randomUUID } from 'node:crypto';
import type { Reply } from '../../plugin/bus/transport';
import {
  IdempotencyClaimLost,
  type Claim,
  type ClaimRequest,
  type IdempotencyId,
  type IdempotencyStore,
  type SqlClient,
} from './store';

export const DEFAULT_IDEMPOTENCY_TABLE = 'idempotency_keys';

const TABLE_NAME = /^[a-z_][a-z0-9_]{0,62}(\.[a-z_][a-z0-9_]{0,62})?$/;

function checkedTable(table: string): string {
  if (!TABLE_NAME.test(table)) throw new Error(`Not a plain table name: ${JSON.stringify(table)}`);
  return table;
}

/**
 * The table of the PostgreSQL store, one statement each (a prepared statement, as pg with parameters and PGlite
 * run them, takes only one): idempotent, so run them at start or as one of your versioned migrations. The time
 * columns are the database's clock, so instances with skewed clocks agree on leases and expiry.
 */
export function idempotencyMigrationStatements(table = DEFAULT_IDEMPOTENCY_TABLE): string[] {
  const t = checkedTable(table);
  const index = `${t.replace('.', '_')}_expires_at`;
  return [
    `CREATE TABLE IF NOT EXISTS ${t} (
  service     text        NOT NULL,
  caller      text        NOT NULL,
  key         text        NOT NULL,
  fingerprint text        NOT NULL,
  token       text        NOT NULL,
  reply       jsonb,
  lease_until timestamptz NOT NULL,
  expires_at  timestamptz NOT NULL,
  PRIMARY KEY (service, caller, key)
)`,
    `CREATE INDEX IF NOT EXISTS ${index} ON ${t} (expires_at)`,
  ];
}

/** The same as one SQL script (see idempotencyMigrationStatements). */
export function idempotencyMigration(table = DEFAULT_IDEMPOTENCY_TABLE): string {
  return idempotencyMigrationStatements(table)
    .map((s) => `${s};\n`)
    .join('');
}

/** The interval of the milliseconds in parameter $n. */
function ms(n: number): string {
  return `($${n}::double precision * interval '1 millisecond')`;
}

/**
 * Keys in PostgreSQL, shared by every instance of a service. `reply IS NULL` marks a running attempt, whose claim
 * (token) holds a lease the SDK renews while the handler runs; an instance that dies stops renewing, and the next
 * attempt with the same body takes the claim over once the lease has lapsed.
 */
export class PgIdempotencyStore implements IdempotencyStore {
  private readonly table: string;

  constructor(
    private readonly db: SqlClient,
    opts: { table?: string } = {},
  ) {
    this.table = checkedTable(opts.table ?? DEFAULT_IDEMPOTENCY_TABLE);
  }

  /** Creates the table if it is not there (see idempotencyMigration). */
  async migrate(): Promise<void> {
    for (const statement of idempotencyMigrationStatements(this.table)) await this.db.query(statement);
  }

  async claim({ id, fingerprint, ttlMs, leaseMs, token: given }: ClaimRequest): Promise<Claim> {
    const t = this.table;
    // The row may expire or be released between the two statements: then try again.
    for (let attempt = 0; attempt < 3; attempt++) {
      const token = given ?? randomUUID();
      const inserted = await this.db.query<{ token: string }>(
        `INSERT INTO ${t} AS k (service, caller, key, fingerprint, token, reply, lease_until, expires_at)
         VALUES ($1, $2, $3, $4, $5, NULL, now() + ${ms(6)}, now() + ${ms(7)})
         ON CONFLICT (service, caller, key) DO UPDATE
           SET fingerprint = EXCLUDED.fingerprint, token = EXCLUDED.token, reply = NULL, lease_until = EXCLUDED.lease_until,
               expires_at = CASE WHEN k.expires_at <= now() THEN EXCLUDED.expires_at ELSE k.expires_at END
           WHERE k.expires_at <= now() OR (k.reply IS NULL AND k.lease_until <= now() AND k.fingerprint = EXCLUDED.fingerprint)
         RETURNING token`,
        [id.service, id.caller, id.key, fingerprint, token, leaseMs, ttlMs],
      );
      if (inserted.rows.length > 0) return { state: 'claimed', token };
      const found = await this.db.query<{ fingerprint: string; reply: Reply | string | null }>(
        `SELECT fingerprint, reply FROM ${t} WHERE service = $1 AND caller = $2 AND key = $3 AND expires_at > now()`,
        [id.service, id.caller, id.key],
      );
      const row = found.rows[0];
      if (!row) continue;
      if (row.reply === null) return { state: 'running', fingerprint: row.fingerprint };
      return {
        state: 'done',
        fingerprint: row.fingerprint,
        reply: (typeof row.reply === 'string' ? JSON.parse(row.reply) : row.reply) as Reply,
      };
    }
    throw new Error('The idempotency key kept changing under the claim');
  }

  async renew(id: IdempotencyId, token: string, leaseMs: number): Promise<boolean> {
    const { rows } = await this.db.query(
      `UPDATE ${this.table} SET lease_until = now() + ${ms(5)}
       WHERE service = $1 AND caller = $2 AND key = $3 AND token = $4 AND reply IS NULL RETURNING 1`,
      [id.service, id.caller, id.key, token, leaseMs],
    );
    return rows.length > 0;
  }

  async complete(id: IdempotencyId, token: string, reply: Reply, client: SqlClient = this.db): Promise<void> {
    const { rows } = await client.query(
      `UPDATE ${this.table} SET reply = $5::jsonb
       WHERE service = $1 AND caller = $2 AND key = $3 AND token = $4 AND reply IS NULL RETURNING 1`,
      [id.service, id.caller, id.key, token, JSON.stringify(reply)],
    );
    if (rows.length === 0) throw new IdempotencyClaimLost();
  }

  async release(id: IdempotencyId, token: string): Promise<void> {
    await this.db.query(
      `DELETE FROM ${this.table} WHERE service = $1 AND caller = $2 AND key = $3 AND token = $4 AND reply IS NULL`,
      [id.service, id.caller, id.key, token],
    );
  }

  async purgeExpired(): Promise<number> {
    const { rows } = await this.db.query<{ n: number }>(
      `WITH gone AS (DELETE FROM ${this.table} WHERE expires_at <= now() RETURNING 1) SELECT count(*)::int AS n FROM gone`,
    );
    return Number(rows[0]?.n ?? 0);
  }
}
