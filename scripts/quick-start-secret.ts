import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface QuickStartSecret {
  secret: string;
  file: string;
  /** True when this start made it; false when an earlier start did. */
  created: boolean;
}

/**
 * The quick start's JWT_SECRET: generated on the first start, kept in `<dataDir>/jwt-secret` readable by its
 * owner only, and read back on every later start, so tokens issued before a restart still verify after it.
 */
export function quickStartSecret(dataDir: string): QuickStartSecret {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = join(dataDir, 'jwt-secret');
  const secret = randomBytes(32).toString('base64url');
  try {
    // wx: of two first starts at once, one writes and the other reads what it wrote.
    writeFileSync(file, `${secret}\n`, { mode: 0o600, flag: 'wx' });
    return { secret, file, created: true };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST')
      throw new Error(`the JWT secret file ${file} could not be written (${(err as NodeJS.ErrnoException).code})`);
  }
  // A copy restored with looser permissions is tightened rather than refused.
  if ((statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600);
  const kept = readFileSync(file, 'utf8').trim();
  if (kept.length < 32)
    throw new Error(
      `the JWT secret file ${file} holds fewer than 32 characters; delete it to generate a new one, or set JWT_SECRET`,
    );
  return { secret: kept, file, created: false };
}
