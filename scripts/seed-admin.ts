import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import bcrypt from 'bcryptjs';
import { EmailTaken, type UserRecord, type UserStore } from '../examples/users-service/store';
import { RefreshStore } from '../examples/auth-service/refresh-store';

export interface SeedAdminOptions {
  /** Where a generated password is written (the data directory, beside the generated JWT secret). */
  dataDir: string;
  /** A line of the process's log (the plugin's logger under `npm start`: text or JSON lines, redacted). */
  log: (line: string) => void;
  /** A line that needs the operator's attention (an ADMIN_PASSWORD not applied); `log` when not given. */
  warn?: (line: string) => void;
}

/**
 * The first administrator of the reference services, from ADMIN_EMAIL / ADMIN_PASSWORD, made once: an account
 * that exists is left as it is (its password may have changed since), and a different ADMIN_PASSWORD is then
 * reported, not applied, unless ADMIN_PASSWORD_RESET=true asks for it (which gives the account the admin role
 * back too). When no account holds admin:all, the ADMIN_EMAIL account gets the admin role back, so an instance
 * left without an administrator is repaired by a restart. Without ADMIN_PASSWORD one is generated,
 * only when the account is made, so a fresh start is never left with a known default. It goes to a file only
 * this user can read, and the log names the file: log lines never carry a password (they are often shipped).
 */
export async function seedAdmin(
  store: UserStore,
  opts: SeedAdminOptions,
  env: NodeJS.ProcessEnv = process.env,
): Promise<void> {
  const email = env.ADMIN_EMAIL || 'admin@example.com';
  let password = env.ADMIN_PASSWORD;
  const reset = checkAdminSettings(env);
  const existing = await store.findByEmail(email);
  if (existing) {
    if (password && reset) return resetAdmin(store, existing, password, opts);
    await restoreIfNoAdministrator(store, existing, opts);
    return password ? reportOtherPassword(existing, password, opts) : undefined;
  }
  // Users but no administrator: the last one was deleted, and this start makes one again (said below).
  const recovering =
    (await store.lockAdministrators(store.db)).length === 0 &&
    (await store.list({ offset: 0, limit: 1 })).totalCount > 0;
  const generated = !password;
  if (!password) password = randomBytes(12).toString('base64url');
  try {
    await store.insert({
      email,
      name: 'Administrator',
      role: 'admin',
      permissions: [],
      passwordHash: await bcrypt.hash(password, 10),
    });
  } catch (err) {
    // Another instance starting at the same time made it first.
    if (err instanceof EmailTaken) return;
    throw err;
  }
  if (!generated) {
    if (recovering) (opts.warn ?? opts.log)(`no account held admin:all: administrator ${email} (ADMIN_EMAIL) created`);
    return;
  }
  mkdirSync(opts.dataDir, { recursive: true, mode: 0o700 });
  const file = join(opts.dataDir, 'admin-password');
  // One left from an earlier database is replaced, not rewritten: a copy with looser permissions must not keep them.
  rmSync(file, { force: true });
  writeFileSync(file, `${password}\n`, { mode: 0o600, flag: 'wx' });
  opts.log(
    `administrator ${email} created; its generated password is in ${file} (readable by this user only; delete the file once read)`,
  );
}

/**
 * Throws on an ADMIN_PASSWORD shorter than 8 characters, an ADMIN_PASSWORD_RESET other than `true`/`false`, or a
 * reset without a password (`npm start` checks before it starts anything); returns whether a reset is asked for.
 */
export function checkAdminSettings(env: NodeJS.ProcessEnv): boolean {
  const password = env.ADMIN_PASSWORD;
  if (password !== undefined && password !== '' && password.length < 8)
    throw new Error('ADMIN_PASSWORD must be at least 8 characters');
  const value = env.ADMIN_PASSWORD_RESET;
  if (value === undefined || value === '' || value === 'false') return false;
  if (value !== 'true') throw new Error('ADMIN_PASSWORD_RESET must be true or false');
  if (!password) throw new Error('ADMIN_PASSWORD_RESET=true needs ADMIN_PASSWORD, the password to set');
  return true;
}

/** The ADMIN_EMAIL account made an administrator again when no account holds admin:all; one line says so. */
async function restoreIfNoAdministrator(store: UserStore, account: UserRecord, opts: SeedAdminOptions): Promise<void> {
  if (account.role === 'admin') return;
  const restored = await store.db.transaction(async (tx) => {
    if ((await store.lockAdministrators(tx)).length > 0) return false;
    await store.update(account.userId, { role: 'admin' }, tx);
    return true;
  });
  if (restored)
    (opts.warn ?? opts.log)(`no account held admin:all: ${account.email} (ADMIN_EMAIL) has the admin role again`);
}

/**
 * An ADMIN_PASSWORD for an administrator that exists, without ADMIN_PASSWORD_RESET: nothing to do when it is
 * already the password, else one line saying it was not applied and how to apply it.
 */
async function reportOtherPassword(admin: UserRecord, password: string, opts: SeedAdminOptions): Promise<void> {
  if (admin.passwordHash && (await bcrypt.compare(password, admin.passwordHash))) return;
  (opts.warn ?? opts.log)(
    `ADMIN_PASSWORD is not applied: administrator ${admin.email} already exists with another password; start once with ADMIN_PASSWORD_RESET=true to set it (docs/operations.md#data-of-the-reference-services)`,
  );
}

/**
 * ADMIN_PASSWORD_RESET=true: the password set, the admin role given back when it was taken, and the account's
 * refresh tokens revoked, as a password change does.
 */
async function resetAdmin(
  store: UserStore,
  admin: UserRecord,
  password: string,
  opts: SeedAdminOptions,
): Promise<void> {
  const hash = await bcrypt.hash(password, 10);
  const restoreRole = admin.role !== 'admin';
  await store.db.transaction(async (tx) => {
    await store.setPasswordHash(admin.userId, hash, tx);
    if (restoreRole) await store.update(admin.userId, { role: 'admin' }, tx);
    await new RefreshStore(tx).revokeAllOf(admin.userId, 'password-change', tx);
  });
  (opts.warn ?? opts.log)(
    `administrator ${admin.email}: password set from ADMIN_PASSWORD (ADMIN_PASSWORD_RESET=true)${restoreRole ? ', the admin role given back' : ''}, its refresh tokens revoked; unset ADMIN_PASSWORD_RESET for later starts`,
  );
}
