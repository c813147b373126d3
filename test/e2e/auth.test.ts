import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, decodeJwt, exportJWK, generateKeyPair } from 'jose';
import { startGateway, type GatewayProcess } from '../support/gateway-process';
import { http } from '../support/http';
import { postFrom } from '../support/local-address';

const SECRET = 'e2e-secret-that-is-at-least-32-characters-long';
const ADMIN = { email: 'root@example.com', password: 'root-password-1' };

/** A login sent from another loopback address: the gateway passes it on as clientAddress, a distinct client's. */
async function loginFrom(
  localAddress: string,
  url: string,
  body: { email: string; password: string },
): Promise<number> {
  return (await postFrom(false, localAddress, url, body)).status;
}

/** A stand-in for an external identity provider's key-set host, on loopback. */
async function keySetServer(jwks: unknown): Promise<{ url: string; server: Server }> {
  const server = createServer((_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(jwks));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks`, server };
}

describe('authentication, permissions and the reference auth service (end to end)', () => {
  let gw: GatewayProcess;
  let api: string;
  let idp: { url: string; server: Server };
  let idpKey: CryptoKey;

  before(async () => {
    const pair = await generateKeyPair('RS256');
    idpKey = pair.privateKey;
    idp = await keySetServer({
      keys: [{ ...(await exportJWK(pair.publicKey)), kid: 'idp-1', alg: 'RS256', use: 'sig' }],
    });
    gw = await startGateway({
      BUS_URL: 'embedded',
      JWT_SECRET: SECRET,
      ADMIN_EMAIL: ADMIN.email,
      ADMIN_PASSWORD: ADMIN.password,
      GOOGLE_CLIENT_ID: 'our-google-client',
      GOOGLE_JWKS_URI: idp.url,
    });
    api = `${gw.baseUrl}/api`;
  });
  after(async () => {
    await gw?.stop();
    idp?.server.close();
  });

  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
  async function login(email: string, password: string, path = '/login') {
    return http('POST', `${api}${path}`, { body: { email, password } });
  }
  async function adminToken(): Promise<string> {
    const res = await login(ADMIN.email, ADMIN.password);
    expect(res.status, res.text).to.equal(200);
    return res.body.accessToken;
  }

  it('refuses a request without a token: 401 NO_AUTH_HEADER with WWW-Authenticate', async () => {
    const res = await http('GET', `${api}/users`);
    expect(res.status).to.equal(401);
    expect(res.body.code).to.equal('NO_AUTH_HEADER');
    expect(res.headers.get('www-authenticate')).to.match(/^Bearer/);
  });

  it('logs in on both path families and the token opens the API', async () => {
    for (const path of ['/login', '/auth/authenticate']) {
      const res = await login(ADMIN.email, ADMIN.password, path);
      expect(res.status, res.text).to.equal(200);
      expect(res.body).to.include({ success: true, expiresIn: 3600 });
      expect(res.body.user).to.include({ email: ADMIN.email });
      expect(res.body.user.permissions).to.include('admin:all');
      const claims = decodeJwt(res.body.accessToken);
      expect(claims.sub).to.equal(res.body.user.userId);
      expect(decodeJwt(res.body.refreshToken)).to.include({ type: 'refresh' }).and.to.have.property('jti');
      expect((await http('GET', `${api}/users`, { headers: bearer(res.body.accessToken) })).status).to.equal(200);
    }
  });

  it('answers wrong credentials with 401 INVALID_CREDENTIALS and locks the account after repeated failures', async () => {
    const first = await login('nobody@example.com', 'whatever-1');
    expect(first.status).to.equal(401);
    expect(first.body.code).to.equal('INVALID_CREDENTIALS');
    const token = await adminToken();
    await http('POST', `${api}/users`, {
      headers: bearer(token),
      body: { email: 'guessed@example.com', password: 'real-password-1' },
    });
    for (let i = 0; i < 5; i++) expect((await login('guessed@example.com', `wrong-${i}-pass`)).status).to.equal(401);
    const locked = await login('guessed@example.com', 'real-password-1');
    expect(locked.status).to.equal(429);
    expect(locked.body.code).to.equal('RATE_LIMIT_EXCEEDED');
    expect(locked.body.retryAfter).to.be.a('number').above(0);
    expect(locked.headers.get('retry-after')).to.equal(String(locked.body.retryAfter));
  });

  it('does not let wrong guesses from 12 addresses lock the owner out, while each guessing address is stopped', async function () {
    this.timeout(180_000);
    const owner = { email: 'owner@example.com', password: 'owner-password-1' };
    const created = await http('POST', `${api}/users`, { headers: bearer(await adminToken()), body: owner });
    expect(created.status, created.text).to.equal(201);
    const statuses: number[] = [];
    for (let a = 1; a <= 12; a++) {
      for (let i = 0; i < 6; i++)
        statuses.push(
          await loginFrom(`127.0.0.${10 + a}`, `${api}/login`, {
            email: owner.email,
            password: `wrong-${a}-${i}-pass`,
          }),
        );
    }
    // 5 failures from each of the first 10 addresses reach the account's 50; then each new address has one.
    expect(statuses.filter((s) => s === 401)).to.have.length(52);
    expect(statuses.filter((s) => s === 429)).to.have.length(20);
    expect(
      await loginFrom('127.0.0.11', `${api}/login`, owner),
      'a guessing address, even with the right password',
    ).to.equal(429);
    expect(
      await loginFrom('127.0.0.50', `${api}/login`, owner),
      'the owner from an address that has not failed',
    ).to.equal(200);
  });

  it('refreshes on both paths, refuses an access token as refresh token, and honours revocation', async () => {
    const { body } = await login(ADMIN.email, ADMIN.password);
    for (const path of ['/refresh-token', '/auth/refresh-token']) {
      const res = await http('POST', `${api}${path}`, { body: { refreshToken: body.refreshToken } });
      expect(res.status, res.text).to.equal(200);
      expect(res.body).to.include({ success: true, expiresIn: 3600 });
      expect(decodeJwt(res.body.accessToken).sub).to.equal(body.user.userId);
    }
    const wrongType = await http('POST', `${api}/refresh-token`, { body: { refreshToken: body.accessToken } });
    expect(wrongType.status).to.equal(401);
    expect(wrongType.body.code).to.equal('INVALID_TOKEN');

    const revoke = await http('POST', `${api}/auth/revoke-token`, {
      headers: bearer(body.accessToken),
      body: { token: body.refreshToken },
    });
    expect(revoke.status, revoke.text).to.equal(200);
    expect(revoke.body).to.deep.equal({ success: true, revoked: true });
    const after = await http('POST', `${api}/refresh-token`, { body: { refreshToken: body.refreshToken } });
    expect(after.status).to.equal(401);
  });

  it('logout revokes every refresh token of the user', async () => {
    const a = (await login(ADMIN.email, ADMIN.password)).body;
    const b = (await login(ADMIN.email, ADMIN.password)).body;
    const out = await http('POST', `${api}/logout`, {
      headers: bearer(a.accessToken),
      body: { userId: a.user.userId },
    });
    expect(out.status, out.text).to.equal(200);
    expect(out.body.success).to.equal(true);
    for (const t of [a.refreshToken, b.refreshToken]) {
      expect((await http('POST', `${api}/refresh-token`, { body: { refreshToken: t } })).status).to.equal(401);
    }
  });

  it('enforces permissions: 403 INSUFFICIENT_PERMISSIONS until an administrator grants, then the next token has it', async () => {
    const admin = await adminToken();
    const created = await http('POST', `${api}/users`, {
      headers: bearer(admin),
      body: { email: 'reader@example.com', password: 'reader-pass-1', firstName: 'Rita' },
    });
    expect(created.status, created.text).to.equal(201);
    const userId = created.body.userId;
    const session = (await login('reader@example.com', 'reader-pass-1')).body;

    const denied = await http('GET', `${api}/users`, { headers: bearer(session.accessToken) });
    expect(denied.status).to.equal(403);
    expect(denied.body).to.include({ code: 'INSUFFICIENT_PERMISSIONS', requiredPermission: 'users:read' });

    const selfGrant = await http('POST', `${api}/users/${userId}/permissions`, {
      headers: bearer(session.accessToken),
      body: { permission: 'users:read' },
    });
    expect(selfGrant.status).to.equal(403);

    const grant = await http('POST', `${api}/users/${userId}/permissions`, {
      headers: bearer(admin),
      body: { permission: 'users:read' },
    });
    expect(grant.status, grant.text).to.equal(200);
    expect(grant.body.permissions).to.include('users:read');
    const perms = await http('GET', `${api}/users/${userId}/permissions`, { headers: bearer(admin) });
    expect(perms.body).to.include({ userId });
    expect(perms.body.permissions).to.deep.equal(['users:read']);

    const refreshed = await http('POST', `${api}/refresh-token`, { body: { refreshToken: session.refreshToken } });
    expect(decodeJwt(refreshed.body.accessToken).permissions).to.deep.equal(['users:read']);
    expect((await http('GET', `${api}/users`, { headers: bearer(refreshed.body.accessToken) })).status).to.equal(200);
  });

  it('logs in with an external provider id token verified against its key set, issuer and audience', async () => {
    const idToken = await new SignJWT({ email: 'ext@example.com', name: 'Ext User' })
      .setProtectedHeader({ alg: 'RS256', kid: 'idp-1' })
      .setSubject('google-123')
      .setIssuer('https://accounts.google.com')
      .setAudience('our-google-client')
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(idpKey);
    const res = await http('POST', `${api}/login/external`, { body: { provider: 'google', idToken } });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.user).to.include({ email: 'ext@example.com', name: 'Ext User' });
    const again = await http('POST', `${api}/login/external`, { body: { provider: 'google', idToken } });
    expect(again.body.user.userId, 'the same identity maps to the same user').to.equal(res.body.user.userId);

    const otherAudience = await new SignJWT({ email: 'ext@example.com' })
      .setProtectedHeader({ alg: 'RS256', kid: 'idp-1' })
      .setSubject('google-123')
      .setIssuer('https://accounts.google.com')
      .setAudience('someone-else')
      .setExpirationTime('5m')
      .sign(idpKey);
    const bad = await http('POST', `${api}/login/external`, { body: { provider: 'google', idToken: otherAudience } });
    expect(bad.status).to.equal(401);
    expect(bad.body.code).to.equal('INVALID_CREDENTIALS');

    const unconfigured = await http('POST', `${api}/login/external`, { body: { provider: 'apple', idToken } });
    expect(unconfigured.status).to.equal(400);
  });

  it('lets only holders of auth:external link external users', async () => {
    const body = { externalProvider: 'partner', externalUserId: 'p-1', email: 'partner@example.com', name: 'Partner' };
    const session = (await login('reader@example.com', 'reader-pass-1')).body;
    const denied = await http('POST', `${api}/authenticate-external-user`, {
      headers: bearer(session.accessToken),
      body,
    });
    expect(denied.status).to.equal(403);
    expect(denied.body.requiredPermission).to.equal('auth:external');
    const ok = await http('POST', `${api}/authenticate-external-user`, { headers: bearer(await adminToken()), body });
    expect(ok.status, ok.text).to.equal(200);
    expect(ok.body.accessToken).to.be.a('string');
  });
});

describe('development mode (end to end)', () => {
  let gw: GatewayProcess;
  before(async () => {
    gw = await startGateway({ BUS_URL: 'embedded', JWT_SECRET: SECRET, DEVELOPMENT_AUTH_ENABLED: 'true' });
  });
  after(async () => gw?.stop());

  it('acts as the user of X-Dev-User-Id with the permissions of X-Dev-Permissions', async () => {
    const ok = await http('GET', `${gw.baseUrl}/api/users`, {
      headers: { 'x-dev-user-id': 'dev-1', 'x-dev-permissions': ' users:read , ,users:create' },
    });
    expect(ok.status, ok.text).to.equal(200);
    const denied = await http('DELETE', `${gw.baseUrl}/api/users/anyone`, {
      headers: { 'X-DEV-USER-ID': 'dev-1', 'X-Dev-Permissions': 'users:read' },
    });
    expect(denied.status).to.equal(403);
    expect(denied.body.requiredPermission).to.equal('users:delete');
    const anonymous = await http('GET', `${gw.baseUrl}/api/users`, { headers: { 'x-dev-permissions': 'users:read' } });
    expect(anonymous.status).to.equal(401);
  });

  it('warns loudly at start', () => {
    expect(gw.output()).to.match(/DEVELOPMENT_AUTH_ENABLED/);
  });
});

describe('development headers outside development mode (end to end)', () => {
  let gw: GatewayProcess;
  before(async () => {
    gw = await startGateway({ BUS_URL: 'embedded', JWT_SECRET: SECRET, DEVELOPMENT_AUTH_ENABLED: 'TRUE' });
  });
  after(async () => gw?.stop());

  it('ignores them unless DEVELOPMENT_AUTH_ENABLED is exactly "true"', async () => {
    const res = await http('GET', `${gw.baseUrl}/api/users`, {
      headers: { 'x-dev-user-id': 'dev-1', 'x-dev-permissions': 'admin:all' },
    });
    expect(res.status).to.equal(401);
    expect(res.body.code).to.equal('NO_AUTH_HEADER');
  });
});
