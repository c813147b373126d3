// The walk-through of docs/walk-through.md as a check: every step's status and error code is asserted, and each
// step is printed (test/docs/walk-through.test.ts checks that each request of the page is a step here).
// Plain Node (fetch), no dependencies, so it runs against any gateway: `npm start`, the containers, compose.
//   node scripts/ci/walkthrough.mjs <gateway url> <admin password> [steps]
// steps: `all` (default, the page's walk-through), `persist-write` (creates a user that must survive a restart of
// the reference services), `persist-read` (expects it; for stores that keep their data).
const [gw, adminPassword, steps = 'all'] = process.argv.slice(2);
if (!gw || !adminPassword) {
  console.error('usage: node walkthrough.mjs <gateway url> <admin password> [all|persist-write|persist-read]');
  process.exit(2);
}
const ADMIN = { email: process.env.ADMIN_EMAIL || 'admin@example.com', password: adminPassword };
const JSON_TYPE = { 'Content-Type': 'application/json' };

async function call(method, path, { token, body } = {}) {
  const headers = { ...(body === undefined ? {} : JSON_TYPE), ...(token ? { Authorization: `Bearer ${token}` } : {}) };
  const res = await fetch(gw + path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(15000),
  });
  const text = await res.text();
  let json;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, json, text };
}

/** One step: the request, the status it must answer and, for errors, the code; prints the step either way. */
async function step(name, method, path, expected, opts = {}) {
  const r = await call(method, path, opts);
  const code = r.json?.code;
  const ok = r.status === expected.status && (expected.code === undefined || code === expected.code);
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}: ${method} ${path} -> ${r.status}${code ? ` ${code}` : ''}`);
  if (!ok)
    throw new Error(
      `${name}: expected ${expected.status}${expected.code ? ` ${expected.code}` : ''}, got ${r.status}: ${r.text.slice(0, 300)}`,
    );
  return r;
}

function check(name, condition, detail) {
  console.log(`${condition ? 'ok  ' : 'FAIL'} ${name}`);
  if (!condition) throw new Error(`${name}: ${detail}`);
}

/** Logs in, retrying while the services are still announcing (503/504 until the routes exist). */
async function login(credentials, attempts = 60) {
  for (let i = 1; ; i++) {
    const r = await call('POST', '/api/login', { body: credentials }).catch((err) => ({
      status: 0,
      text: String(err),
    }));
    if (r.status === 200) {
      console.log(`ok   log in as ${credentials.email}: POST /api/login -> 200`);
      return r.json;
    }
    if (i >= attempts || (r.status !== 0 && r.status !== 404 && r.status < 500)) {
      throw new Error(`log in as ${credentials.email}: ${r.status} ${String(r.text).slice(0, 300)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

async function walkthrough() {
  const session = await login(ADMIN);
  const token = session.accessToken;
  check(
    'the login answer carries an access and a refresh token',
    typeof token === 'string' && typeof session.refreshToken === 'string',
    JSON.stringify(session),
  );

  await step('without a token', 'GET', '/api/users', { status: 401, code: 'NO_AUTH_HEADER' });
  const ada = { email: 'ada@example.com', firstName: 'Ada', lastName: 'Lovelace', password: 'correct-horse' };
  const created = await step('create a user', 'POST', '/api/users', { status: 201 }, { token, body: ada });
  check('the created user has a Location header', Boolean(created.headers.get('location')), 'no Location header');
  await step(
    'invalid input',
    'POST',
    '/api/users',
    { status: 400, code: 'VALIDATION_ERROR' },
    { token, body: { email: 'not-an-email', password: 'short' } },
  );
  const page = await step(
    'list, page and filter',
    'GET',
    '/api/users?page=1&pageSize=5&search=ada',
    { status: 200 },
    { token },
  );
  check(
    'the list finds exactly Ada',
    page.json.totalCount === 1 && page.json.users.length === 1,
    JSON.stringify(page.json),
  );
  const user = page.json.users[0].userId;

  await step('read', 'GET', `/api/users/${user}`, { status: 200 }, { token });
  await step('read by query string', 'GET', `/api/users?userId=${user}`, { status: 200 }, { token });
  const fields = await step(
    'read some fields',
    'GET',
    `/api/users/${user}?fields=email,firstName`,
    { status: 200 },
    { token },
  );
  check(
    'only the fields asked for',
    fields.json.email === ada.email && fields.json.lastName === undefined,
    JSON.stringify(fields.json),
  );
  await step('update', 'PUT', `/api/users/${user}`, { status: 200 }, { token, body: { lastName: 'King' } });

  const adaSession = await login({ email: ada.email, password: ada.password });
  await step(
    'Ada without permission',
    'GET',
    '/api/users',
    { status: 403, code: 'INSUFFICIENT_PERMISSIONS' },
    { token: adaSession.accessToken },
  );
  const granted = await call('POST', `/api/users/${user}/permissions`, { token, body: { permission: 'users:read' } });
  check(`grant users:read -> ${granted.status}`, granted.status >= 200 && granted.status < 300, granted.text);
  const perms = await step('list permissions', 'GET', `/api/users/${user}/permissions`, { status: 200 }, { token });
  check('Ada holds users:read', JSON.stringify(perms.json).includes('users:read'), perms.text);
  const refreshed = await step(
    'refresh',
    'POST',
    '/api/refresh-token',
    { status: 200 },
    { body: { refreshToken: adaSession.refreshToken } },
  );
  await step(
    'Ada with users:read',
    'GET',
    '/api/users?pageSize=1',
    { status: 200 },
    { token: refreshed.json.accessToken },
  );

  const out = await call('POST', '/api/logout', { token, body: { userId: session.user.userId } });
  check(`log out -> ${out.status}`, out.status >= 200 && out.status < 300, out.text);
  await step(
    'the revoked refresh token',
    'POST',
    '/api/refresh-token',
    { status: 401 },
    { body: { refreshToken: session.refreshToken } },
  );
  await step('delete', 'DELETE', `/api/users/${user}`, { status: 204 }, { token });
  await step('read after delete', 'GET', `/api/users/${user}`, { status: 404, code: 'NOT_FOUND' }, { token });
}

const KEPT = { email: 'grace@example.com', firstName: 'Grace', lastName: 'Hopper', password: 'correct-horse' };

async function persistWrite() {
  const { accessToken: token } = await login(ADMIN);
  await step('create a user to keep', 'POST', '/api/users', { status: 201 }, { token, body: KEPT });
}

async function persistRead() {
  const { accessToken: token } = await login(ADMIN);
  const list = await step('list after the restart', 'GET', '/api/users?search=grace', { status: 200 }, { token });
  check('the user created before the restart is still there', list.json.totalCount === 1, JSON.stringify(list.json));
  await login({ email: KEPT.email, password: KEPT.password });
}

const run = { all: walkthrough, 'persist-write': persistWrite, 'persist-read': persistRead }[steps];
if (!run) {
  console.error(`unknown steps: ${steps}`);
  process.exit(2);
}
run().then(
  () => console.log(`walk-through (${steps}): passed`),
  (err) => {
    console.error(`walk-through (${steps}) failed: ${err.message}`);
    process.exit(1);
  },
);
