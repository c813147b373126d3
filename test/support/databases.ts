import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';

/** The PostgreSQL server the tests use (this machine's, user postgres, trust). */
const PG_ADMIN_URL = process.env.TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

/** A database of its own for one test run on the shared server, dropped afterwards. */
export async function createTestDatabase(label = 't'): Promise<TestDatabase> {
  const name = `test_${label}_${process.pid}_${randomBytes(4).toString('hex')}`;
  await adminQuery(`create database ${name}`);
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: () => adminQuery(`drop database if exists ${name} with (force)`),
  };
}

async function adminQuery(sql: string): Promise<void> {
  const client = new Client({ connectionString: PG_ADMIN_URL });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** A temporary directory for an embedded database, removed afterwards. */
export function tempDataDir(label = 'data'): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), `contracts-${label}-`));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Both backends the reference services run on, as the settings that select them. */
export interface Backend {
  name: string;
  /** Fresh, empty storage settings; `cleanup` removes what they made. */
  fresh(): Promise<{ settings: { databaseUrl?: string; dataDir: string }; cleanup(): Promise<void> }>;
}

export const BACKENDS: Backend[] = [
  {
    name: 'PostgreSQL',
    async fresh() {
      const db = await createTestDatabase();
      const data = tempDataDir();
      return {
        settings: { databaseUrl: db.url, dataDir: data.dir },
        cleanup: async () => {
          data.remove();
          await db.drop();
        },
      };
    },
  },
  {
    name: 'PGlite',
    async fresh() {
      const data = tempDataDir();
      return { settings: { dataDir: data.dir }, cleanup: async () => data.remove() };
    },
  },
];
