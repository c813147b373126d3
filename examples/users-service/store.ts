import { randomUUID } from 'node:crypto';
import { isUniqueViolation, type Database, type SqlClient } from '../storage/database';

export interface UserRecord {
  userId: string;
  email: string;
  firstName?: string;
  lastName?: string;
  name?: string;
  role: 'user' | 'admin';
  profile?: { firstName?: string; lastName?: string };
  permissions: string[];
  passwordHash?: string;
  createdAt: string;
  updatedAt: string;
}

export type NewUser = Omit<UserRecord, 'userId' | 'createdAt' | 'updatedAt'>;
export type UserChanges = Partial<Pick<UserRecord, 'email' | 'firstName' | 'lastName' | 'name' | 'role'>>;

/** What the admin role carries, and what a grant can give too: an account holding it is an administrator. */
export const ADMIN_PERMISSION = 'admin:all';

/** The email belongs to another user (the database's unique index said so, whatever the case). */
export class EmailTaken extends Error {
  constructor() {
    super('email taken');
    this.name = 'EmailTaken';
  }
}

export interface UserQuery {
  role?: string;
  /** Lower-case text looked for in the name, first name, last name and email. */
  search?: string;
  sort?: string;
  order?: 'asc' | 'desc';
  offset: number;
  limit: number;
}

/** Sortable fields and their columns: the only text of the query that comes from a caller, so a fixed list. */
const SORT_COLUMNS: Record<string, string> = {
  email: 'lower(u.email)',
  name: "lower(coalesce(u.name, ''))",
  firstName: "lower(coalesce(u.first_name, ''))",
  lastName: "lower(coalesce(u.last_name, ''))",
  role: 'u.role',
  createdAt: 'u.created_at',
  updatedAt: 'u.updated_at',
};

const SELECT_USER = `select u.user_id, u.email, u.first_name, u.last_name, u.name, u.role, u.profile, u.password_hash,
  u.created_at, u.updated_at,
  array(select p.permission from user_permissions p where p.user_id = u.user_id order by p.permission) as permissions
  from users u`;

interface UserRow {
  user_id: string;
  email: string;
  first_name: string | null;
  last_name: string | null;
  name: string | null;
  role: 'user' | 'admin';
  profile: { firstName?: string; lastName?: string } | null;
  password_hash: string | null;
  created_at: Date | string;
  updated_at: Date | string;
  permissions: string[] | null;
}

/** A row as the record the handlers know: absent fields left out (never null), times as ISO strings. */
function toRecord(row: UserRow): UserRecord {
  const user: UserRecord = {
    userId: row.user_id,
    email: row.email,
    role: row.role,
    permissions: row.permissions ?? [],
    createdAt: new Date(row.created_at).toISOString(),
    updatedAt: new Date(row.updated_at).toISOString(),
  };
  if (row.first_name !== null) user.firstName = row.first_name;
  if (row.last_name !== null) user.lastName = row.last_name;
  if (row.name !== null) user.name = row.name;
  if (row.profile !== null) user.profile = row.profile;
  if (row.password_hash !== null) user.passwordHash = row.password_hash;
  return user;
}

/** Users in the database; one email per user whatever its case, enforced by a unique index. */
export class UserStore {
  constructor(readonly db: Database) {}

  async get(userId: string, client: SqlClient = this.db): Promise<UserRecord | undefined> {
    return this.one(client, `${SELECT_USER} where u.user_id = $1`, [userId]);
  }

  findByEmail(email: string, client: SqlClient = this.db): Promise<UserRecord | undefined> {
    return this.one(client, `${SELECT_USER} where lower(u.email) = lower($1)`, [email]);
  }

  findByExternal(provider: string, externalUserId: string): Promise<UserRecord | undefined> {
    const sql = `${SELECT_USER} join external_identities x on x.user_id = u.user_id where x.provider = $1 and x.external_user_id = $2`;
    return this.one(this.db, sql, [provider, externalUserId]);
  }

  /**
   * A new user (and its first external identity, in the same transaction: `client`'s when given, else one of its
   * own); EmailTaken when the email is.
   */
  insert(
    fields: NewUser,
    external?: { provider: string; externalUserId: string },
    client?: SqlClient,
  ): Promise<UserRecord> {
    const userId = randomUUID();
    return this.inTransaction(client, async (tx) => {
      // The profile goes as an object: both drivers encode a jsonb parameter themselves.
      await tx.query(
        `insert into users (user_id, email, first_name, last_name, name, role, profile, password_hash, created_at, updated_at)
         values ($1, $2, $3, $4, $5, $6, $7, $8, clock_timestamp(), clock_timestamp())`,
        [
          userId,
          fields.email,
          fields.firstName ?? null,
          fields.lastName ?? null,
          fields.name ?? null,
          fields.role,
          fields.profile ?? null,
          fields.passwordHash ?? null,
        ],
      );
      for (const permission of fields.permissions) {
        await tx.query('insert into user_permissions (user_id, permission) values ($1, $2) on conflict do nothing', [
          userId,
          permission,
        ]);
      }
      if (external) await this.addExternal(tx, userId, external.provider, external.externalUserId);
      return (await this.get(userId, tx))!;
    }).catch(rethrowEmailTaken);
  }

  /** The changed user, undefined when there is none; EmailTaken when the new email is another user's. */
  async update(userId: string, changes: UserChanges, client: SqlClient = this.db): Promise<UserRecord | undefined> {
    const columns: Record<keyof UserChanges, string> = {
      email: 'email',
      firstName: 'first_name',
      lastName: 'last_name',
      name: 'name',
      role: 'role',
    };
    const sets: string[] = ['updated_at = clock_timestamp()'];
    const params: unknown[] = [userId];
    const param: Partial<Record<keyof UserChanges, string>> = {};
    for (const key of Object.keys(columns) as (keyof UserChanges)[]) {
      if (changes[key] === undefined) continue;
      params.push(changes[key]);
      param[key] = `$${params.length}`;
      sets.push(`${columns[key]} = ${param[key]}`);
    }
    if (changes.name === undefined && (param.firstName || param.lastName)) {
      // A name made of firstName and lastName (as create makes it) follows them; one chosen apart from them stays.
      const fullName = (first: string, last: string): string =>
        `nullif(concat_ws(' ', nullif(${first}, ''), nullif(${last}, '')), '')`;
      const next = fullName(
        param.firstName ? `${param.firstName}::text` : 'first_name',
        param.lastName ? `${param.lastName}::text` : 'last_name',
      );
      sets.push(
        `name = case when name is not distinct from ${fullName('first_name', 'last_name')} then ${next} else name end`,
      );
    }
    const { rows } = await client
      .query(`update users set ${sets.join(', ')} where user_id = $1 returning user_id`, params)
      .catch(rethrowEmailTaken);
    return rows.length ? this.get(userId, client) : undefined;
  }

  /** Replaces the user's password hash; false when there is no such user. */
  async setPasswordHash(userId: string, passwordHash: string, client: SqlClient = this.db): Promise<boolean> {
    const { rows } = await client.query(
      'update users set password_hash = $2, updated_at = clock_timestamp() where user_id = $1 returning user_id',
      [userId, passwordHash],
    );
    return rows.length > 0;
  }

  async delete(userId: string, client: SqlClient = this.db): Promise<boolean> {
    const { rows } = await client.query('delete from users where user_id = $1 returning user_id', [userId]);
    return rows.length > 0;
  }

  /**
   * The accounts holding admin:all (by role or by grant), locked until `tx` ends: two changes that each take one
   * administrator away wait for each other, so the second sees the first's result and cannot leave none.
   */
  async lockAdministrators(tx: SqlClient): Promise<string[]> {
    const { rows } = await tx.query<{ user_id: string }>(
      `select u.user_id from users u where u.role = 'admin' or exists
         (select 1 from user_permissions p where p.user_id = u.user_id and p.permission = $1)
       order by u.user_id for update of u`,
      [ADMIN_PERMISSION],
    );
    return rows.map((r) => r.user_id);
  }

  /** Adds a permission (once); the user as it is now, undefined when there is none. `client`: as for insert. */
  grant(userId: string, permission: string, client?: SqlClient): Promise<UserRecord | undefined> {
    return this.inTransaction(client, async (tx) => {
      const { rows } = await tx.query('select user_id from users where user_id = $1 for update', [userId]);
      if (!rows.length) return undefined;
      const added = await tx.query(
        'insert into user_permissions (user_id, permission) values ($1, $2) on conflict do nothing returning permission',
        [userId, permission],
      );
      if (added.rows.length)
        await tx.query('update users set updated_at = clock_timestamp() where user_id = $1', [userId]);
      return this.get(userId, tx);
    });
  }

  /** Links an identity at an external provider to an existing user. */
  async linkExternal(userId: string, provider: string, externalUserId: string): Promise<UserRecord | undefined> {
    await this.addExternal(this.db, userId, provider, externalUserId);
    return this.get(userId);
  }

  /** One window of the users the query selects, and how many it selects in all. */
  async list(q: UserQuery): Promise<{ users: UserRecord[]; totalCount: number }> {
    const where: string[] = [];
    const params: unknown[] = [];
    if (q.role) {
      params.push(q.role);
      where.push(`u.role = $${params.length}`);
    }
    if (q.search) {
      // strpos, not LIKE: a caller's % or _ is looked for as it is.
      params.push(q.search);
      const p = `$${params.length}`;
      where.push(
        `(strpos(lower(coalesce(u.name, '')), ${p}) > 0 or strpos(lower(coalesce(u.first_name, '')), ${p}) > 0 or strpos(lower(coalesce(u.last_name, '')), ${p}) > 0 or strpos(lower(u.email), ${p}) > 0)`,
      );
    }
    const filter = where.length ? ` where ${where.join(' and ')}` : '';
    const dir = q.order === 'desc' ? 'desc' : 'asc';
    const sort = q.sort && SORT_COLUMNS[q.sort] ? `${SORT_COLUMNS[q.sort]} ${dir}, ` : '';
    const count = await this.db.query<{ n: number | string }>(`select count(*) as n from users u${filter}`, params);
    const page = await this.db.query<UserRow>(
      `${SELECT_USER}${filter} order by ${sort}u.created_at, u.user_id limit $${params.length + 1} offset $${params.length + 2}`,
      [...params, q.limit, q.offset],
    );
    return { users: page.rows.map(toRecord), totalCount: Number(count.rows[0]?.n ?? 0) };
  }

  /** `fn` in the caller's transaction when there is one, else in a transaction of its own. */
  private inTransaction<T>(client: SqlClient | undefined, fn: (tx: SqlClient) => Promise<T>): Promise<T> {
    return client ? fn(client) : this.db.transaction(fn);
  }

  private async addExternal(
    client: SqlClient,
    userId: string,
    provider: string,
    externalUserId: string,
  ): Promise<void> {
    await client.query(
      'insert into external_identities (provider, external_user_id, user_id) values ($1, $2, $3) on conflict do nothing',
      [provider, externalUserId, userId],
    );
  }

  private async one(client: SqlClient, sql: string, params: unknown[]): Promise<UserRecord | undefined> {
    const { rows } = await client.query<UserRow>(sql, params);
    return rows[0] ? toRecord(rows[0]) : undefined;
  }
}

function rethrowEmailTaken(err: unknown): never {
  throw isUniqueViolation(err, 'users_email_key') ? new EmailTaken() : err;
}
