import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import bcrypt from 'bcryptjs';
import { EmailTaken, type UserStore } from '../examples/users-service/store';

export interface SeedAdminOptions {
  /** Where a generated password is written (the data directory, beside the generated JWT secret). */
  dataDir: string;
  /** A line of the process's log (the plugin's logger under `npm start`: text or JSON lines, redacted). */
  log: (line: string) => void;
}

/**
 * The first administrator of the reference services, from ADMIN_EMAIL / ADMIN_PASSWORD, made once: an account
 * that exists is left as it is (its password may have changed since). Without ADMIN_PASSWORD one is generated,
 * only when the account is made, so a fresh start is never left with a known default. It goes to a file only
 * this user can read, and the log names the file: log lines never carry a password (they are often shipped).
 */
export async function seedAdmin(store: UserStore, opts: SeedAdminOptions, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const email = env.ADMIN_EMAIL || 'admin@example.com';
  let password = env.ADMIN_PASSWORD;
  if (password !== undefined && password !== '' && password.length < 8) throw new Error('ADMIN_PASSWORD must be at least 8 characters');
  if (await store.findByEmail(email)) return;
  const generated = !password;
  if (!password) password = randomBytes(12).toString('base64url');
  try {
    await store.insert({ email, name: 'Administrator', role: 'admin', permissions: [], passwordHash: await bcrypt.hash(password, 10) });
  } catch (err) {
    // Another instance starting at the same time made it first.
    if (err instanceof EmailTaken) return;
    throw err;
  }
  if (!generated) return;
  mkdirSync(opts.dataDir, { recursive: true, mode: 0o700 });
  const file = join(opts.dataDir, 'admin-password');
  // One left from an earlier database is replaced, not rewritten: a copy with looser permissions must not keep them.
  rmSync(file, { force: true });
  writeFileSync(file, `${password}\n`, { mode: 0o600, flag: 'wx' });
  opts.log(`administrator ${email} created; its generated password is in ${file} (readable by this user only; delete the file once read)`);
}
