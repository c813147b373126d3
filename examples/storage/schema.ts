import { idempotencyMigrationStatements } from '../../sdk/idempotency/pg-store';
import type { Migration } from './migrations';

/**
 * The reference services' tables. Emails are unique whatever their case, as the services compare them; a user's
 * permissions and external identities go with the user; refresh tokens keep their revocation (reason and time)
 * until they expire; login attempts are counted per key within a window. Both services keep their idempotency keys
 * here too, so an answer commits with the change it reports.
 */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'users, permissions, external identities, refresh tokens, login attempts',
    statements: [
      `create table users (
        user_id text primary key,
        email text not null,
        first_name text,
        last_name text,
        name text,
        role text not null check (role in ('user', 'admin')),
        profile jsonb,
        password_hash text,
        created_at timestamptz not null,
        updated_at timestamptz not null
      )`,
      'create unique index users_email_key on users (lower(email))',
      `create table user_permissions (
        user_id text not null references users (user_id) on delete cascade,
        permission text not null,
        primary key (user_id, permission)
      )`,
      `create table external_identities (
        provider text not null,
        external_user_id text not null,
        user_id text not null references users (user_id) on delete cascade,
        primary key (provider, external_user_id)
      )`,
      'create index external_identities_user on external_identities (user_id)',
      `create table refresh_tokens (
        jti text primary key,
        user_id text not null,
        expires_at timestamptz not null,
        revoked_reason text,
        revoked_at timestamptz
      )`,
      'create index refresh_tokens_user on refresh_tokens (user_id)',
      'create index refresh_tokens_expiry on refresh_tokens (expires_at)',
      `create table login_attempts (
        key text primary key,
        attempts integer not null,
        window_start timestamptz not null
      )`,
      'create index login_attempts_window on login_attempts (window_start)',
    ],
  },
  {
    version: 2,
    name: 'idempotency keys of both services',
    // The SDK's table as it is today (if not exists): a later change to it needs a migration of its own.
    statements: idempotencyMigrationStatements(),
  },
];
