import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import type Redis from 'ioredis';
import { deleteWorkQueues } from '../support/broker';
import { AMQP_URL, uniquePrefix } from '../support/env';
import { eventually, startGateway, type GatewayProcess } from '../support/gateway-process';
import { http, httpAs, type HttpResult } from '../support/http';
import { createTestDatabase, type TestDatabase } from '../support/databases';
import { startScriptProcess, type ServiceProcess } from '../support/service-process';
import { TEST_JWT_SECRET } from '../support/tokens';
import { connectRedis, deleteKeys, REDIS } from '../support/redis';

/** The gateway-wide budget per caller and window: each step below calls as a caller of its own. */
const RATE_LIMIT = 40;
const KEYED_CREATES = 30;

/**
 * Everything that must be shared when the stack runs more than once: two gateway processes, and two processes of
 * the reference services (scripts/reference-services: a users and an auth service each), on one RabbitMQ (this
 * run's prefix), one PostgreSQL (a database of this run) and one Redis (this run's rate-limit prefix).
 */
describe('scale-out: two gateways, two users and two auth services, one RabbitMQ, PostgreSQL and Redis', function () {
  this.timeout(120_000);
  const prefix = uniquePrefix('scale');
  const rateLimitPrefix = uniquePrefix('scale-rl');
  let db: TestDatabase;
  let redis: Redis;
  let a: GatewayProcess;
  let b: GatewayProcess;
  const services: ServiceProcess[] = [];

  before(async () => {
    db = await createTestDatabase('scale');
    redis = await connectRedis();
    const serviceEnv = {
      BUS_URL: AMQP_URL,
      BUS_PREFIX: prefix,
      DATABASE_URL: db.url,
      JWT_SECRET: TEST_JWT_SECRET,
      ADMIN_PASSWORD: 'scale-out-admin',
    };
    // One after the other would be the same: concurrent starts migrate under an advisory lock and seed one admin.
    services.push(
      ...(await Promise.all([
        startScriptProcess('scripts/reference-services', serviceEnv),
        startScriptProcess('scripts/reference-services', serviceEnv),
      ])),
    );
    const gatewayEnv = {
      BUS_URL: AMQP_URL,
      BUS_PREFIX: prefix,
      START_REFERENCE_SERVICES: 'false',
      EG_DB_EMULATE: 'false',
      REDIS_HOST: REDIS.host,
      REDIS_PORT: String(REDIS.port),
      RATE_LIMIT_MAX: String(RATE_LIMIT),
      RATE_LIMIT_WINDOW_MS: '600000',
      RATE_LIMIT_PREFIX: rateLimitPrefix,
      // Far above what the test needs: a request that waited for its deadline would show as a 504.
      REQUEST_TIMEOUT_MS: '30000',
    };
    [a, b] = await Promise.all([startGateway(gatewayEnv), startGateway(gatewayEnv)]);
    for (const gw of [a, b]) {
      await eventually(async () => {
        // A caller and an account of its own each time: polling must spend no budget and trip no login throttle.
        const ready = httpAs(['admin:all'], `warm-up-${randomUUID()}`);
        const users = await ready('GET', `${gw.baseUrl}/api/users?pageSize=1`);
        const login = await ready('POST', `${gw.baseUrl}/api/login`, {
          body: { email: `nobody-${randomUUID()}@example.com`, password: 'x' },
        });
        if (users.status !== 200 || login.status !== 401)
          throw new Error(`routes not ready: ${users.status} ${login.status}`);
      }, 20000);
    }
  });

  after(async () => {
    for (const s of services) await s.stop();
    await Promise.all([a?.stop(), b?.stop()]);
    await deleteWorkQueues(AMQP_URL, prefix, ['users-service', 'auth-service']).catch(() => undefined);
    if (redis) {
      await deleteKeys(redis, `rl:${rateLimitPrefix}:*`);
      redis.disconnect();
    }
    await db?.drop();
  });

  it('a user created through gateway A is read through gateway B', async () => {
    const admin = httpAs(['admin:all'], 'step-read');
    const made = await admin('POST', `${a.baseUrl}/api/users`, {
      body: { email: 'across@example.com', name: 'Across' },
    });
    expect(made.status, made.text).to.equal(201);
    const read = await admin('GET', `${b.baseUrl}/api/users/${made.body.userId}`);
    expect(read.status, read.text).to.equal(200);
    expect(read.body).to.include({ userId: made.body.userId, email: 'across@example.com' });
  });

  it('a refresh token revoked through gateway A is refused through gateway B', async () => {
    const admin = httpAs(['admin:all'], 'step-revoke');
    const password = 'a-long-enough-password';
    expect(
      (await admin('POST', `${a.baseUrl}/api/users`, { body: { email: 'revoked@example.com', password } })).status,
    ).to.equal(201);
    const login = await http('POST', `${a.baseUrl}/api/login`, { body: { email: 'revoked@example.com', password } });
    expect(login.status, login.text).to.equal(200);
    const { accessToken, refreshToken } = login.body as { accessToken: string; refreshToken: string };
    // Before the revocation the other gateway (and whichever auth instance takes it) honours the token.
    const before = await http('POST', `${b.baseUrl}/api/refresh-token`, { body: { refreshToken } });
    expect(before.status, before.text).to.equal(200);
    const revoke = await http('POST', `${a.baseUrl}/api/auth/revoke-token`, {
      body: { token: refreshToken },
      headers: { authorization: `Bearer ${accessToken}` },
    });
    expect(revoke.status, revoke.text).to.equal(200);
    expect(revoke.body.revoked).to.equal(true);
    // Several tries: the two auth instances take turns on the queue, and each must refuse it.
    for (let i = 0; i < 4; i++) {
      const after = await http('POST', `${b.baseUrl}/api/refresh-token`, { body: { refreshToken } });
      expect(after.status, after.text).to.equal(401);
      expect(after.body.code).to.equal('INVALID_TOKEN');
    }
  });

  it("one caller's rate limit is one budget: spent half through A and half through B, then 429 on both", async () => {
    const caller = httpAs(['admin:all'], 'step-rate-limit');
    const remaining: number[] = [];
    for (let i = 0; i < RATE_LIMIT; i++) {
      const res = await caller('GET', `${(i % 2 ? b : a).baseUrl}/api/users?pageSize=1`);
      expect(res.status, res.text).to.equal(200);
      remaining.push(Number(res.headers.get('x-ratelimit-remaining')));
    }
    expect(remaining).to.deep.equal(Array.from({ length: RATE_LIMIT }, (_, i) => RATE_LIMIT - 1 - i));
    for (const gw of [a, b]) {
      const over = await caller('GET', `${gw.baseUrl}/api/users?pageSize=1`);
      expect(over.status).to.equal(429);
      expect(over.body.code).to.equal('RATE_LIMIT_EXCEEDED');
    }
  });

  it('concurrent creates of one email through both gateways: exactly one 201, the others 409', async () => {
    const admin = httpAs(['admin:all'], 'step-race');
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        admin('POST', `${(i % 2 ? b : a).baseUrl}/api/users`, {
          body: { email: i % 2 ? 'race@example.com' : 'RACE@example.com', name: `R${i}` },
        }),
      ),
    );
    const statuses = results.map((r) => r.status).sort();
    expect(
      statuses,
      JSON.stringify(results.filter((r) => r.status !== 201 && r.status !== 409).map((r) => r.text)),
    ).to.deep.equal([201, ...Array<number>(19).fill(409)]);
    for (const r of results.filter((x) => x.status === 409)) expect(r.body.conflictingField).to.equal('email');
    expect(await usersWithEmails(db.url, ['race@example.com'])).to.have.length(1);
  });

  it(`one service process SIGKILLed under ${KEYED_CREATES} keyed creates: every create answered 201, each user made once`, async () => {
    const admin = httpAs(['admin:all'], 'step-kill');
    const emails = Array.from({ length: KEYED_CREATES }, (_, i) => `kept-${i}@example.com`);
    const keys = emails.map(() => randomUUID());
    // A password makes each create hash it (tens of ms): the instances hold many at once.
    const create = (i: number) =>
      admin('POST', `${(i % 2 ? b : a).baseUrl}/api/users`, {
        body: { email: emails[i], password: 'long-enough-1' },
        headers: { 'idempotency-key': keys[i]! },
      });
    const pending: Promise<HttpResult>[] = emails.map((_, i) => create(i));
    // An instance claims a key as it takes the request, then hashes: with more claims running than one instance
    // takes at once (prefetch 16), both hold some. Kill one then.
    const running = await eventually(
      async () => {
        const now = await claimTokens(db.url, keys, 'running');
        if (now.size < 20) throw new Error(`${now.size} running`);
        return now;
      },
      20000,
      10,
    );
    const [victim] = services;
    victim!.child.kill('SIGKILL');
    const results = await Promise.all(pending);

    expect(results.filter((r) => r.status !== 201).map((r) => `${r.status} ${r.text}`)).to.deep.equal([]);
    const stored = await usersWithEmails(db.url, emails);
    expect(stored, 'each user exactly once').to.have.length(KEYED_CREATES);
    const idOf = new Map(stored.map((u) => [u.email, u.user_id]));
    results.forEach((r, i) => {
      expect(r.body.userId, emails[i]).to.equal(idOf.get(emails[i]!));
    });
    // The kill hit creates in flight: claims of the dead process were taken over (a new token) once their lease lapsed.
    const final = await claimTokens(db.url, keys, 'all');
    const takenOver = [...running].filter(([key, token]) => final.get(key) !== token);
    expect(takenOver.length, `of ${running.size} running when the process died`).to.be.greaterThan(0);
    // A retry of any of them is the recorded answer, not a second create.
    const again = await create(KEYED_CREATES - 1);
    expect(again.status).to.equal(201);
    expect(again.headers.get('idempotent-replayed')).to.equal('true');
    expect(again.body.userId).to.equal(results[KEYED_CREATES - 1]!.body.userId);
  });
});

async function withClient<T>(url: string, fn: (c: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

function usersWithEmails(url: string, emails: string[]): Promise<{ user_id: string; email: string }[]> {
  return withClient(
    url,
    async (c) =>
      (await c.query('select user_id, lower(email) as email from users where lower(email) = any($1)', [emails])).rows,
  );
}

/** The claim token of each of these keys (`running`: only those without an answer yet, creates in flight now). */
function claimTokens(url: string, keys: string[], which: 'running' | 'all'): Promise<Map<string, string>> {
  const sql = `select key, token from idempotency_keys where key = any($1)${which === 'running' ? ' and reply is null' : ''}`;
  return withClient(
    url,
    async (c) =>
      new Map((await c.query<{ key: string; token: string }>(sql, [keys])).rows.map((r) => [r.key, r.token])),
  );
}
