import { expect } from 'chai';
import { startGateway, type GatewayProcess } from '../support/gateway-process';
import { httpAs } from '../support/http';

/** Authenticated as an administrator: what is tested here lies behind authentication. */
const http = httpAs(['admin:all']);
import { AMQP_URL } from '../support/env';

/**
 * The users API through the real Express Gateway and the reference users service:
 * once over RabbitMQ (gateway → broker → service → broker → gateway) and once on the embedded bus.
 */
// routing: table (one generated endpoint, the plugin's path table) must answer exactly as one endpoint per route.
for (const bus of [
  { name: 'RabbitMQ', url: AMQP_URL, routing: 'endpoints' },
  { name: 'embedded bus', url: 'embedded', routing: 'endpoints' },
  { name: 'RabbitMQ with routing: table', url: AMQP_URL, routing: 'table' },
]) {
  describe(`users through Express Gateway on the ${bus.name}`, () => {
    let gw: GatewayProcess;
    let api: string;

    before(async () => {
      gw = await startGateway({ BUS_URL: bus.url, CONTRACT_ROUTING: bus.routing });
      api = `${gw.baseUrl}/api`;
    });
    after(async () => gw?.stop());

    async function createUser(body: Record<string, unknown>) {
      const res = await http('POST', `${api}/users`, { body });
      expect(res.status, res.text).to.equal(201);
      return res;
    }

    it('creates a user: 201, ids, createdAt, Location, no password, JSON and trace headers', async () => {
      const res = await createUser({
        email: 'ada@example.com',
        firstName: 'Ada',
        lastName: 'Lovelace',
        password: 'correct-horse',
      });
      expect(res.headers.get('content-type')).to.match(/^application\/json/);
      expect(res.body.userId).to.be.a('string').and.equal(res.body.id);
      expect(res.body.email).to.equal('ada@example.com');
      expect(new Date(res.body.createdAt).toISOString()).to.equal(res.body.createdAt);
      expect(res.body.role).to.equal('user');
      expect(res.headers.get('location')).to.equal(`/api/users/${res.body.userId}`);
      expect(res.text).not.to.match(/password|correct-horse/i);
      expect(res.headers.get('x-correlation-id')).to.be.a('string');
      expect(res.headers.get('x-request-id')).to.be.a('string');
    });

    it('accepts the name/role/password/profile variant of create', async () => {
      const res = await createUser({
        email: 'grace@example.com',
        name: 'Grace Hopper',
        role: 'admin',
        password: 'cobol-1959',
        profile: { firstName: 'Grace', lastName: 'Hopper' },
      });
      expect(res.body).to.include({ name: 'Grace Hopper', role: 'admin', success: true });
      expect(res.body.profile).to.deep.equal({ firstName: 'Grace', lastName: 'Hopper' });
    });

    it('echoes a caller correlation id', async () => {
      const res = await http('GET', `${api}/users`, { headers: { 'X-Correlation-Id': 'trace-abc-123' } });
      expect(res.headers.get('x-correlation-id')).to.equal('trace-abc-123');
    });

    it('answers 409 RESOURCE_CONFLICT with conflictingField on a duplicate email', async () => {
      await createUser({ email: 'dup@example.com', firstName: 'A' });
      const res = await http('POST', `${api}/users`, { body: { email: 'DUP@example.com', firstName: 'B' } });
      expect(res.status).to.equal(409);
      expect(res.body).to.include({ code: 'RESOURCE_CONFLICT', conflictingField: 'email', error: 'Conflict' });
      expect(res.body.correlationId).to.equal(res.headers.get('x-correlation-id'));
    });

    it('gets a user by path, by ?userId= and with field selection', async () => {
      const { body: created } = await createUser({ email: 'get@example.com', firstName: 'Get', lastName: 'Me' });
      const byPath = await http('GET', `${api}/users/${created.userId}`);
      expect(byPath.status).to.equal(200);
      expect(byPath.body).to.include({ userId: created.userId, email: 'get@example.com', firstName: 'Get' });
      const byQuery = await http('GET', `${api}/users?userId=${created.userId}`);
      expect(byQuery.status).to.equal(200);
      expect(byQuery.body.userId).to.equal(created.userId);
      expect(byQuery.body).not.to.have.property('users');
      const some = await http('GET', `${api}/users/${created.userId}?fields=email,firstName`);
      // The ids come with every selection: the contract's output requires them.
      expect(some.body).to.deep.equal({
        email: 'get@example.com',
        firstName: 'Get',
        userId: created.userId,
        id: created.userId,
      });
    });

    it('answers 404 NOT_FOUND with resourceType and resourceId', async () => {
      const res = await http('GET', `${api}/users/nobody`);
      expect(res.status).to.equal(404);
      expect(res.body).to.include({ code: 'NOT_FOUND', resourceType: 'User', resourceId: 'nobody' });
    });

    it('updates a user: 200 with updatedAt', async () => {
      const { body: created } = await createUser({ email: 'upd@example.com', firstName: 'Old' });
      await new Promise((r) => setTimeout(r, 5));
      const res = await http('PUT', `${api}/users/${created.userId}`, { body: { firstName: 'New', role: 'admin' } });
      expect(res.status).to.equal(200);
      expect(res.body).to.include({ userId: created.userId, firstName: 'New', role: 'admin' });
      expect(Date.parse(res.body.updatedAt)).to.be.greaterThan(Date.parse(created.createdAt));
    });

    it('giving a role needs admin:all: users:create alone cannot create an administrator, users:update alone cannot promote itself', async () => {
      const refusedAdmin = (res: { status: number; text: string; body: Record<string, unknown> }) => {
        expect(res.status, res.text).to.equal(403);
        expect(res.body).to.include({ code: 'INSUFFICIENT_PERMISSIONS', requiredPermission: 'admin:all' });
      };
      const creator = httpAs(['users:create'], 'creator-without-admin');
      refusedAdmin(
        await creator('POST', `${api}/users`, {
          body: { email: 'would-be-admin@example.com', name: 'Would Be', role: 'admin' },
        }),
      );
      expect((await http('GET', `${api}/users?search=would-be-admin`)).body.totalCount, 'nobody was created').to.equal(
        0,
      );
      const plain = await creator('POST', `${api}/users`, { body: { email: 'plain-user@example.com', role: 'user' } });
      expect(plain.status, plain.text).to.equal(201);
      expect(plain.body).to.include({ role: 'user', success: true });

      // A user holding users:update, on its own record: other fields change, its role does not.
      const self = plain.body.userId as string;
      const updater = httpAs(['users:update'], self);
      refusedAdmin(await updater('PUT', `${api}/users/${self}`, { body: { firstName: 'Sneaky', role: 'admin' } }));
      const unchanged = await http('GET', `${api}/users/${self}`);
      expect(unchanged.body).to.include({ role: 'user' });
      expect(unchanged.body).not.to.have.property('firstName');
      const same = await updater('PUT', `${api}/users/${self}`, { body: { firstName: 'Plain', role: 'user' } });
      expect(same.status, same.text).to.equal(200);
      expect(same.body).to.include({ firstName: 'Plain', role: 'user' });

      // An administrator still can, both ways.
      const promoted = await http('PUT', `${api}/users/${self}`, { body: { role: 'admin' } });
      expect(promoted.status, promoted.text).to.equal(200);
      expect(promoted.body).to.include({ role: 'admin' });
      expect(promoted.body.permissions).to.deep.equal(['admin:all']);
      // Demoting is a change of role too.
      refusedAdmin(
        await httpAs(['users:update'], 'updater-without-admin')('PUT', `${api}/users/${self}`, {
          body: { role: 'user' },
        }),
      );
    });

    it('recomputes a name made of firstName and lastName when either changes, and keeps a name given on its own', async () => {
      const { body: derived } = await createUser({ email: 'rename@example.com', firstName: 'Ada', lastName: 'Byron' });
      expect(derived.name).to.equal('Ada Byron');
      const renamed = await http('PUT', `${api}/users/${derived.userId}`, { body: { lastName: 'Lovelace' } });
      expect(renamed.status, renamed.text).to.equal(200);
      expect(renamed.body).to.include({ firstName: 'Ada', lastName: 'Lovelace', name: 'Ada Lovelace' });
      expect((await http('GET', `${api}/users/${derived.userId}`)).body.name).to.equal('Ada Lovelace');

      const both = await http('PUT', `${api}/users/${derived.userId}`, {
        body: { firstName: 'Augusta', name: 'Countess of Lovelace' },
      });
      expect(both.body).to.include({ firstName: 'Augusta', name: 'Countess of Lovelace' });
      // A name that is not firstName + lastName was chosen: a later change of either leaves it.
      const kept = await http('PUT', `${api}/users/${derived.userId}`, { body: { firstName: 'Ada' } });
      expect(kept.body).to.include({ firstName: 'Ada', name: 'Countess of Lovelace' });
    });

    it('shows the permissions a login grants: an administrator has admin:all in the list and in its own record', async () => {
      const { body: admin } = await createUser({ email: 'perm-admin@example.com', name: 'Perm Admin', role: 'admin' });
      const { body: user } = await createUser({ email: 'perm-user@example.com', name: 'Perm User' });
      expect(admin.permissions).to.deep.equal(['admin:all']);
      expect(user.permissions).to.deep.equal([]);
      const listed = await http('GET', `${api}/users?search=perm-`);
      const byEmail = Object.fromEntries(
        (listed.body.users as Array<{ email: string; permissions: string[] }>).map((u) => [u.email, u.permissions]),
      );
      expect(byEmail).to.deep.equal({ 'perm-admin@example.com': ['admin:all'], 'perm-user@example.com': [] });
      expect((await http('GET', `${api}/users/${admin.userId}`)).body.permissions).to.deep.equal(['admin:all']);
      expect((await http('GET', `${api}/users/${admin.userId}/permissions`)).body.permissions).to.deep.equal([
        'admin:all',
      ]);
    });

    it('refuses a body userId that contradicts the path', async () => {
      const { body: created } = await createUser({ email: 'pathwins@example.com' });
      const res = await http('PUT', `${api}/users/${created.userId}`, {
        body: { userId: 'someone-else', firstName: 'X' },
      });
      expect(res.status).to.equal(400);
      expect(res.body.code).to.equal('VALIDATION_ERROR');
    });

    it('deletes a user: 204 with no body, then 404', async () => {
      const { body: created } = await createUser({ email: 'del@example.com' });
      const res = await http('DELETE', `${api}/users/${created.userId}`);
      expect(res.status).to.equal(204);
      expect(res.text).to.equal('');
      expect((await http('GET', `${api}/users/${created.userId}`)).status).to.equal(404);
    });

    describe('list', () => {
      before(async () => {
        for (let i = 0; i < 25; i++) {
          await createUser({
            email: `list${String(i).padStart(2, '0')}@example.org`,
            name: `Lister ${String(i).padStart(2, '0')}`,
            role: i % 5 === 0 ? 'admin' : 'user',
          });
        }
      });

      it('returns the envelope with the defaults page 1, pageSize 20', async () => {
        const res = await http('GET', `${api}/users`);
        expect(res.status).to.equal(200);
        expect(res.body).to.include({ page: 1, pageSize: 20 });
        expect(res.body.users).to.have.length(20);
        expect(res.body.totalPages).to.equal(Math.ceil(res.body.totalCount / 20));
        expect(res.body.hasNext).to.equal(true);
        expect(res.text).not.to.match(/passwordHash/);
      });

      it('pages with numeric query strings', async () => {
        const res = await http('GET', `${api}/users?page=2&pageSize=5&search=lister&sort=email&order=asc`);
        expect(res.body).to.include({ page: 2, pageSize: 5, totalCount: 25, totalPages: 5, hasPrevious: true });
        expect(res.body.users.map((u: { email: string }) => u.email)).to.deep.equal([
          'list05@example.org',
          'list06@example.org',
          'list07@example.org',
          'list08@example.org',
          'list09@example.org',
        ]);
      });

      it('filters by role and searches name and email, sorts descending', async () => {
        const res = await http('GET', `${api}/users?role=admin&search=example.org&sort=name&order=desc`);
        expect(res.body.users.map((u: { name: string }) => u.name)).to.deep.equal([
          'Lister 20',
          'Lister 15',
          'Lister 10',
          'Lister 05',
          'Lister 00',
        ]);
      });

      it('supports the limit/offset variant', async () => {
        const res = await http('GET', `${api}/users?search=lister&sort=email&limit=3&offset=6`);
        expect(res.body.users.map((u: { email: string }) => u.email)).to.deep.equal([
          'list06@example.org',
          'list07@example.org',
          'list08@example.org',
        ]);
        expect(res.body.pageSize).to.equal(3);
        expect(res.body.page).to.equal(3);
      });

      // The contract says maximum 100: a larger pageSize is refused rather than silently capped, so a client
      // computing offsets from the pageSize it asked for never skips items (docs/design.md "One request").
      it('accepts pageSize 100 and refuses pageSize above 100 with a 400 naming the field', async () => {
        expect((await http('GET', `${api}/users?pageSize=100`)).body.pageSize).to.equal(100);
        const res = await http('GET', `${api}/users?pageSize=1000`);
        expect(res.status).to.equal(400);
        expect(res.body).to.include({ code: 'VALIDATION_ERROR', error: 'Validation failed' });
        expect(res.body.details).to.deep.equal({ pageSize: 'must be less than or equal to 100' });
      });
    });

    describe('bad bodies', () => {
      it('answers 400 on malformed JSON and 415 on a non-JSON body', async () => {
        const bad = await http('POST', `${api}/users`, {
          body: '{"email": ',
          headers: { 'content-type': 'application/json' },
        });
        expect(bad.status).to.equal(400);
        expect(bad.body.code).to.equal('BAD_REQUEST');
        expect(bad.text).not.to.match(/Unexpected|SyntaxError|at /);
        const text = await http('POST', `${api}/users`, {
          body: 'email=a@b.c',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
        });
        expect(text.status).to.equal(415);
        expect(text.body.code).to.equal('UNSUPPORTED_MEDIA_TYPE');
      });
    });
  });
}
