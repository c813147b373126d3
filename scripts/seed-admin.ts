import { randomBytes } from 'node:crypto';
import bcrypt from 'bcryptjs';
import { EmailTaken, type UserStore } from '../examples/users-service/store';

/**
 * The first administrator of the reference services, from ADMIN_EMAIL / ADMIN_PASSWORD, made once: an account
 * that exists is left as it is (its password may have changed since). Without ADMIN_PASSWORD one is generated
 * and printed, only when the account is made, so a fresh start is never left with a known default.
 */
export async function seedAdmin(store: UserStore, env: NodeJS.ProcessEnv = process.env): Promise<void> {
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
  if (generated) console.log(`[contracts] administrator ${email} created with the generated password: ${password}`);
}
