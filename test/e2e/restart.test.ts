import { expect } from 'chai';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGateway } from '../support/gateway-process';
import { createTestDatabase, type TestDatabase } from '../support/databases';
import { http } from '../support/http';

const ADMIN = { email: 'root@example.com', password: 'root-password-1' };

/**
 * `npm start` stopped and started again on the same data: users, refresh tokens and their revocations are
 * still there, and with no JWT_SECRET set the generated one is kept, so tokens issued before verify after.
 */
for (const backend of ['embedded database', 'PostgreSQL'] as const) {
  describe(`npm start restarted on the ${backend}`, function () {
    this.timeout(90000);
    let configDir: string;
    let pg: TestDatabase | undefined;

    before(async () => {
      configDir = mkdtempSync(join(tmpdir(), 'contracts-restart-'));
      if (backend === 'PostgreSQL') pg = await createTestDatabase('restart');
    });
    after(async () => {
      rmSync(configDir, { recursive: true, force: true });
      await pg?.drop();
    });

    const start = () =>
      startGateway(
        {
          BUS_URL: 'embedded',
          JWT_SECRET: undefined,
          ADMIN_EMAIL: ADMIN.email,
          ADMIN_PASSWORD: ADMIN.password,
          DATABASE_URL: pg?.url,
        },
        { configDir },
      );

    it('keeps the users, the tokens and their revocations, and the generated secret', async () => {
      const secretFile = join(configDir, 'data', 'jwt-secret');
      const first = await start();
      let before: { accessToken: string; refreshToken: string; revokedRefresh: string; userId: string };
      try {
        expect(first.output()).to.include(`JWT_SECRET was not set; generated one into ${secretFile}`);
        expect(statSync(secretFile).mode & 0o777).to.equal(0o600);
        const api = `${first.baseUrl}/api`;
        const login = await http('POST', `${api}/login`, { body: ADMIN });
        expect(login.status, login.text).to.equal(200);
        const auth = { authorization: `Bearer ${login.body.accessToken}` };
        const created = await http('POST', `${api}/users`, {
          headers: auth,
          body: { email: 'kept@example.com', name: 'Kept' },
        });
        expect(created.status, created.text).to.equal(201);
        const second = await http('POST', `${api}/login`, { body: ADMIN });
        const revoke = await http('POST', `${api}/auth/revoke-token`, {
          headers: auth,
          body: { token: second.body.refreshToken },
        });
        expect(revoke.body).to.include({ revoked: true });
        before = {
          accessToken: login.body.accessToken,
          refreshToken: login.body.refreshToken,
          revokedRefresh: second.body.refreshToken,
          userId: created.body.userId,
        };
      } finally {
        await first.stop();
      }

      const again = await start();
      try {
        expect(again.output()).to.include(`JWT_SECRET was not set; using the one generated earlier in ${secretFile}`);
        expect(again.output()).not.to.include('its generated password is in');
        const api = `${again.baseUrl}/api`;
        // The access token issued before the restart verifies after it, and the user made before is there.
        const user = await http('GET', `${api}/users/${before.userId}`, {
          headers: { authorization: `Bearer ${before.accessToken}` },
        });
        expect(user.status, user.text).to.equal(200);
        expect(user.body).to.include({ email: 'kept@example.com', name: 'Kept' });
        const refreshed = await http('POST', `${api}/refresh-token`, { body: { refreshToken: before.refreshToken } });
        expect(refreshed.status, refreshed.text).to.equal(200);
        const revoked = await http('POST', `${api}/refresh-token`, { body: { refreshToken: before.revokedRefresh } });
        expect(revoked.status).to.equal(401);
        const duplicate = await http('POST', `${api}/users`, {
          headers: { authorization: `Bearer ${before.accessToken}` },
          body: { email: 'KEPT@example.com' },
        });
        expect(duplicate.status).to.equal(409);
      } finally {
        await again.stop();
      }
    });
  });
}
