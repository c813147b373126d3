import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { startGateway, type GatewayProcess } from '../support/gateway-process';
import { http, httpAs } from '../support/http';
import { Client } from 'pg';
import { createTestDatabase, type TestDatabase } from '../support/databases';

const admin = httpAs(['admin:all']);
const ADMIN = { email: 'admin@example.com', password: 'correct-horse-battery-9' };

/**
 * `npm start`'s reference users service keeps its idempotency keys in its own database: a repeated create with the
 * same key is answered from there, on a PostgreSQL server (a database of this run) and on the embedded default.
 */
for (const backend of ['PostgreSQL', 'PGlite'] as const) {
  describe(`Idempotency-Key on the reference users service (${backend})`, function () {
    this.timeout(60000);
    let gw: GatewayProcess;
    let db: TestDatabase | undefined;

    before(async () => {
      if (backend === 'PostgreSQL') db = await createTestDatabase('refidem');
      gw = await startGateway({ ADMIN_PASSWORD: ADMIN.password, ...(db ? { DATABASE_URL: db.url } : {}) });
    });
    after(async () => {
      await gw?.stop();
      await db?.drop();
    });

    it('a repeated POST /api/users with one key: 201, then the same 201 marked Idempotent-Replayed; one user', async () => {
      const key = randomUUID();
      const body = { email: `replay-${backend}@example.com`, name: 'Re Play', password: 'long-enough-1' };
      const first = await admin('POST', `${gw.baseUrl}/api/users`, { body, headers: { 'idempotency-key': key } });
      expect(first.status, first.text).to.equal(201);
      expect(first.headers.get('idempotent-replayed')).to.equal(null);
      const again = await admin('POST', `${gw.baseUrl}/api/users`, { body, headers: { 'idempotency-key': key } });
      expect(again.status, again.text).to.equal(201);
      expect(again.headers.get('idempotent-replayed')).to.equal('true');
      expect(again.body).to.deep.equal(first.body);
      expect(again.headers.get('location')).to.equal(first.headers.get('location'));
      const list = await admin('GET', `${gw.baseUrl}/api/users?search=replay-`);
      expect(list.body.totalCount, list.text).to.equal(1);
      if (db) expect(await storedReplies(db.url, key)).to.deep.equal([{ service: 'users-service', status: 201 }]);
    });

    it('a login or refresh sent again with one key runs again: new tokens, never replayed, nothing stored', async () => {
      const key = randomUUID();
      const login = () => http('POST', `${gw.baseUrl}/api/login`, { body: ADMIN, headers: { 'idempotency-key': key } });
      const first = await login();
      const again = await login();
      expect(first.status, first.text).to.equal(200);
      expect(again.status, again.text).to.equal(200);
      expect(again.headers.get('idempotent-replayed')).to.equal(null);
      expect(again.body.refreshToken).to.be.a('string').and.not.equal(first.body.refreshToken);
      const refreshKey = randomUUID();
      const refresh = () =>
        http('POST', `${gw.baseUrl}/api/refresh-token`, {
          body: { refreshToken: again.body.refreshToken },
          headers: { 'idempotency-key': refreshKey },
        });
      const refreshed = await refresh();
      expect(refreshed.status, refreshed.text).to.equal(200);
      const repeat = await refresh();
      expect(repeat.headers.get('idempotent-replayed')).to.equal(null);
      if (db) {
        expect(await storedReplies(db.url, key)).to.deep.equal([]);
        expect(await storedReplies(db.url, refreshKey)).to.deep.equal([]);
      }
    });

    it('without a key a repeat is a second create: 409 on the email', async () => {
      const body = { email: `twice-${backend}@example.com` };
      expect((await admin('POST', `${gw.baseUrl}/api/users`, { body })).status).to.equal(201);
      expect((await admin('POST', `${gw.baseUrl}/api/users`, { body })).status).to.equal(409);
    });
  });
}

/** The answers kept for `key` in the services' own database (what a second instance would find). */
async function storedReplies(url: string, key: string): Promise<unknown[]> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query(
      "select service, (reply->>'status')::int as status from idempotency_keys where key = $1",
      [key],
    );
    return rows;
  } finally {
    await client.end();
  }
}
