import { resolve } from 'node:path';
import type { StorageSettings } from '../examples/storage';

/**
 * Where the reference services keep their data: the PostgreSQL server of DATABASE_URL, or else the embedded
 * database in DATA_DIR (relative paths from the working directory; `defaultDataDir` when unset).
 */
export function storageSettings(env: NodeJS.ProcessEnv, defaultDataDir: string): StorageSettings {
  return { databaseUrl: env.DATABASE_URL || undefined, dataDir: resolve(env.DATA_DIR || defaultDataDir) };
}

/** The start line's words for where the data is. */
export function describeStorage(settings: StorageSettings, location: string): string {
  return settings.databaseUrl ? `PostgreSQL at ${location}` : `embedded PostgreSQL (PGlite) in ${location}`;
}
