import { execFile } from 'node:child_process';
import { expect } from 'chai';
import { createBrokerUsers, type BrokerUsers } from '../support/broker-users';
import { createTestDatabase, type TestDatabase } from '../support/databases';
import { uniquePrefix } from '../support/env';
import { eventually, startGateway, type GatewayProcess } from '../support/gateway-process';
import { http } from '../support/http';
import { startScriptProcess, type ServiceProcess } from '../support/service-process';
import { TEST_JWT_SECRET } from '../support/tokens';

const ADMIN = { email: 'admin@example.com', password: 'per-service-admin-1' };
const USERS_TYPES = [
  'CreateUserCommand',
  'GetUserQuery',
  'UpdateUserCommand',
  'DeleteUserCommand',
  'ListUsersQuery',
  'GetUserPermissions*',
  'GrantUserPermissionCommand',
];
const AUTH_TYPES = [
  'AuthenticateCommand',
  'RefreshTokenCommand',
  'RevokeTokenCommand',
  'LogoutCommand',
  'ExternalLoginCommand',
  'AuthenticateExternalUserCommand',
];

/**
 * docs/operations.md's per-service set-up, end to end: a services file naming each reference service's broker
 * user and message types, the definitions made from it and imported, the gateway on its own user reading the same
 * file, and `dist/scripts/users-service.js` and `dist/scripts/auth-service.js` each in its own process on its own
 * user (BUS_GATEWAY_USER naming the gateway's), sharing one PostgreSQL database. The administrator the users
 * service seeds logs in through the gateway, and its token reads the users.
 */
describe('the reference services as two processes, each on its own broker user', function () {
  this.timeout(180_000);
  const prefix = uniquePrefix('perservice');
  let users: BrokerUsers | undefined;
  let database: TestDatabase | undefined;
  let gw: GatewayProcess | undefined;
  const services: ServiceProcess[] = [];

  before(async () => {
    // As the services file of docs/operations.md: auth-service's login routes are public, both declare http.paths.
    users = await createBrokerUsers(prefix, {
      'users-service': { messageTypes: [...USERS_TYPES], httpPaths: true },
      'auth-service': { messageTypes: [...AUTH_TYPES], public: true, httpPaths: true },
    });
    database = await createTestDatabase('perservice');
    gw = await startGateway(users.gatewayEnv());
    const env = (service: string) => ({
      BUS_URL: users!.url(service),
      BUS_PREFIX: prefix,
      BUS_GATEWAY_USER: users!.user('gateway'),
      DATABASE_URL: database!.url,
      JWT_SECRET: TEST_JWT_SECRET,
      ADMIN_EMAIL: ADMIN.email,
      ADMIN_PASSWORD: ADMIN.password,
    });
    // The users service first: it migrates the database and seeds the administrator before it says ready.
    services.push(await startScriptProcess('scripts/users-service', env('users-service'), 60_000));
    services.push(await startScriptProcess('scripts/auth-service', env('auth-service'), 60_000));
  });

  after(async () => {
    for (const s of services) await s.stop().catch(() => undefined);
    await gw?.stop().catch(() => undefined);
    await users?.remove();
    await database?.drop().catch(() => undefined);
  });

  it('logs the seeded administrator in through the gateway, and its token reads the users', async () => {
    const login = await eventually(async () => {
      const r = await http('POST', `${gw!.baseUrl}/api/login`, { body: ADMIN });
      expect(r.status, r.text).to.equal(200);
      return r;
    }, 30_000);
    expect(login.body.user.permissions).to.include('admin:all');
    const list = await http('GET', `${gw!.baseUrl}/api/users`, {
      headers: { authorization: `Bearer ${login.body.accessToken}` },
    });
    expect(list.status, list.text).to.equal(200);
    expect(list.body.users.map((u: { email: string }) => u.email)).to.include(ADMIN.email);
  });

  it('each process is connected as its own broker user, none as guest', async () => {
    const rows = await new Promise<string>((resolve, reject) =>
      execFile('rabbitmqctl', ['list_connections', 'user', '--formatter', 'json'], (err, out) =>
        err ? reject(err) : resolve(String(out)),
      ),
    );
    const connected = new Set((JSON.parse(rows) as { user: string }[]).map((r) => r.user));
    for (const name of ['gateway', 'users-service', 'auth-service'])
      expect(connected.has(users!.user(name)), name).to.equal(true);
    for (const s of services) expect(s.output()).not.to.include("the bus credential is the shared 'guest'");
  });
});
