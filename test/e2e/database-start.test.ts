import { expect } from 'chai';
import { Client } from 'pg';
import { startGateway } from '../support/gateway-process';
import { createTestDatabase, type TestDatabase } from '../support/databases';
import { freePort } from '../support/env';
import { MIGRATIONS } from '../../examples/storage/schema';

/** What the caller of a failed start sees: startGateway's error, with the process's output. */
async function failedStart(env: Record<string, string>): Promise<string> {
  const err = await startGateway({ BUS_URL: 'embedded', ...env }).then(
    async (gw) => {
      await gw.stop();
      return null;
    },
    (e: Error) => e,
  );
  expect(err, 'the gateway started').to.be.instanceOf(Error);
  return err!.message;
}

describe('npm start and the reference services database', function () {
  this.timeout(60000);

  it('stops with exit status 1 and one line when the database is unreachable, without its password', async () => {
    const port = await freePort();
    const message = await failedStart({ DATABASE_URL: `postgres://app:s3cret-pw@127.0.0.1:${port}/app` });
    expect(message).to.match(/^gateway exited with 1:/);
    const lines = message.split('\n').filter((l) => l.includes('start failed'));
    expect(lines).to.have.length(1);
    expect(lines[0]).to.match(
      new RegExp(
        `^\\[contracts\\] start failed: database unreachable at postgres://127\\.0\\.0\\.1:${port}/app: .*ECONNREFUSED`,
      ),
    );
    expect(message).not.to.include('s3cret-pw');
    expect(message).not.to.match(/\n\s+at /);
  });

  describe('with a schema newer than the code', () => {
    let pg: TestDatabase;
    before(async () => {
      pg = await createTestDatabase('newer');
      const client = new Client({ connectionString: pg.url });
      await client.connect();
      await client.query(
        'create table schema_migrations (version integer primary key, name text not null, applied_at timestamptz not null default now())',
      );
      await client.query("insert into schema_migrations (version, name) values (999, 'from a later release')");
      await client.end();
    });
    after(async () => pg?.drop());

    it('refuses to start, naming both versions', async () => {
      const latest = Math.max(...MIGRATIONS.map((m) => m.version));
      const message = await failedStart({ DATABASE_URL: pg.url });
      expect(message).to.match(/^gateway exited with 1:/);
      expect(message).to.include(
        `[contracts] start failed: the database schema is at version 999, newer than this code knows (${latest}); run the newer release or restore a backup`,
      );
    });
  });
});
