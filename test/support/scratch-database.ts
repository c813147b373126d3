import { randomBytes } from 'node:crypto';
import { Client } from 'pg';

/** The PostgreSQL the tests use: the real one of this machine unless TEST_DATABASE_URL says otherwise. */
export const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** A database of this test run's own (created now, dropped by the returned function). */
export async function scratchDatabase(label = 't'): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `test_${label}_${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = new Client({ connectionString: PG_URL });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(PG_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new Client({ connectionString: PG_URL });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}
