import { randomBytes } from 'node:crypto';
import bcrypt from 'bcryptjs';
import type { UserStore } from '../examples/users-service/store';

/**
 * The first administrator of the reference services, from ADMIN_EMAIL / ADMIN_PASSWORD. Without a password
 * one is generated and printed once, so a fresh start is never left with a known default.
 */
export async function seedAdmin(store: UserStore, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const email = env.ADMIN_EMAIL || 'admin@example.com';
  let password = env.ADMIN_PASSWORD;
  if (!password) {
    password = randomBytes(12).toString('base64url');
    console.log(`[contracts] administrator ${email} created with the generated password: ${password}`);
  } else if (password.length < 8) {
    throw new Error('ADMIN_PASSWORD must be at least 8 characters');
  }
  if (store.findByEmail(email)) return;
  store.insert({ email, name: 'Administrator', role: 'admin', permissions: [], passwordHash: await bcrypt.hash(password, 10) });
}
