import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { deleteWorkQueues } from '../support/broker';
import { AMQP_URL } from '../support/env';
import { eventually, startGateway, type GatewayProcess } from '../support/gateway-process';
import { http as plainHttp, httpAs, type HttpResult } from '../support/http';
import { createTestDatabase, tempDataDir, type TestDatabase } from '../support/databases';
import { startScriptProcess, type ServiceProcess } from '../support/service-process';
import { TcpProxy, viaPort } from '../support/tcp-proxy';
import { TEST_JWT_SECRET } from '../support/tokens';

const http = httpAs(['users:create', 'users:read'], 'faults-admin');
const ADMIN = { email: 'admin@faults.test', password: 'faults-admin-password' };
/** The gateway's deadline for every reference contract: a stall is held for longer. */
const DEADLINE_MS = 4000;
const CREATES = 30;
const CONCURRENCY = 6;
const RECOVERY_MS = 10_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Seen {
  route: 'create' | 'read' | 'login';
  status: number;
  code?: string;
  conflictingField?: string;
  retryAfter: string | null;
  start: number;
  end: number;
}

interface Created {
  key: string;
  email: string;
  userId: string;
}

/**
 * Clients of the users and auth routes: keyed creates, each read back, and logins meanwhile; every failure
 * is retried (a create with its key) after a short pause, as the error table tells clients to. Every answer is kept.
 */
class Load {
  readonly seen: Seen[] = [];
  readonly created: Created[] = [];
  answered = 0;
  private next = 0;

  constructor(
    private readonly baseUrl: string,
    private readonly phase: string,
  ) {}

  run(): Promise<void> {
    return Promise.all([...Array.from({ length: CONCURRENCY }, () => this.worker()), this.logins()]).then(
      () => undefined,
    );
  }

  /** One client logging in over and over (a password hash is costly: many at once would wait for the CPU). */
  private async logins(): Promise<void> {
    while (this.created.length < CREATES) {
      await this.untilAnswered('login', () => plainHttp('POST', `${this.baseUrl}/api/login`, { body: ADMIN }), 200);
      await sleep(200);
    }
  }

  private async worker(): Promise<void> {
    while (this.next < CREATES) {
      const i = this.next++;
      const created = await this.create(i);
      this.created.push(created);
      await this.untilAnswered('read', () => http('GET', `${this.baseUrl}/api/users/${created.userId}`), 200);
      this.answered += 1;
    }
  }

  private async create(i: number): Promise<Created> {
    const key = randomUUID();
    const email = `${this.phase}-${i}@faults.test`;
    const r = await this.untilAnswered(
      'create',
      () =>
        http('POST', `${this.baseUrl}/api/users`, {
          body: { email, firstName: 'F', lastName: `L${i}` },
          headers: { 'idempotency-key': key },
        }),
      201,
    );
    return { key, email, userId: r.body.userId };
  }

  /** Retries while the answer is one a client may retry; fails on anything else. */
  private async untilAnswered(
    route: Seen['route'],
    call: () => Promise<HttpResult>,
    expected: number,
  ): Promise<HttpResult> {
    for (let attempt = 0; attempt < 300; attempt++) {
      const start = Date.now();
      const r = await call();
      this.seen.push({
        route,
        status: r.status,
        code: r.body?.code,
        conflictingField: r.body?.conflictingField,
        retryAfter: r.headers.get('retry-after'),
        start,
        end: Date.now(),
      });
      if (r.status === expected) return r;
      const retryable = r.status === 503 || (r.status === 409 && r.body?.conflictingField === 'Idempotency-Key');
      if (!retryable) throw new Error(`${route} answered ${r.status}: ${r.text}`);
      await sleep(100 + Math.random() * 150);
    }
    throw new Error(`${route} never answered ${expected}`);
  }
}

/**
 * The reference services (two instances, as docker-compose and Kubernetes run them) on PostgreSQL through a TCP
 * proxy, behind a gateway on RabbitMQ, under a load of keyed creates, reads and logins. The proxy cuts every
 * connection, stalls them for longer than the request deadline, and plays a restart (cut, refuse, accept). No
 * process exits; every failure answer is 503 with Retry-After before the deadline (a keyed retry may meet its own
 * first attempt's claim: 409 with Retry-After); the routes answer again within 10 s; and every create the client
 * saw answered 201 is in the database exactly once.
 */
describe('the reference services when PostgreSQL is lost, stalled or restarted (RabbitMQ, PostgreSQL)', function () {
  this.timeout(180_000);
  let server: TestDatabase;
  let pool: Pool;
  let gw: GatewayProcess;
  const services: ServiceProcess[] = [];
  const data = tempDataDir('faults');
  let proxy: TcpProxy;

  before(async () => {
    server = await createTestDatabase('dbfaults');
    pool = new Pool({ connectionString: server.url, max: 2 });
    // The forced drop after the suite ends idle connections; an idle client's error must not be uncaught.
    pool.on('error', () => undefined);
    const pg = new URL(server.url);
    proxy = new TcpProxy({ host: pg.hostname, port: Number(pg.port || 5432) });
    const databaseUrl = viaPort(server.url, await proxy.listen());
    gw = await startGateway({
      BUS_URL: AMQP_URL,
      START_REFERENCE_SERVICES: 'false',
      REQUEST_TIMEOUT_MS: String(DEADLINE_MS),
      // The load's one client logs in several times a second from one address, more than the default allows.
      PUBLIC_RATE_LIMIT_MAX: '100000',
    });
    const env = {
      BUS_URL: AMQP_URL,
      BUS_PREFIX: gw.prefix,
      DATABASE_URL: databaseUrl,
      DATA_DIR: data.dir,
      JWT_SECRET: TEST_JWT_SECRET,
      ADMIN_EMAIL: ADMIN.email,
      ADMIN_PASSWORD: ADMIN.password,
    };
    for (let i = 0; i < 2; i++) services.push(await startScriptProcess('scripts/reference-services', env));
    await eventually(async () => {
      const r = await plainHttp('POST', `${gw.baseUrl}/api/login`, { body: ADMIN });
      if (r.status !== 200) throw new Error(`login not ready: ${r.status} ${r.text}`);
      const list = await http('GET', `${gw.baseUrl}/api/users`);
      if (list.status !== 200) throw new Error(`users not ready: ${list.status} ${list.text}`);
    }, 20000);
  });

  after(async () => {
    for (const s of services) await s.stop();
    await gw?.stop();
    await proxy?.close();
    if (gw) await deleteWorkQueues(AMQP_URL, gw.prefix, ['users-service', 'auth-service']);
    await pool?.end();
    await server?.drop();
    data.remove();
  });

  /** What every phase must show: all alive, failures only the retryable kind before their deadline, each create once. */
  async function expectSound(load: Load, phase: string): Promise<void> {
    for (const s of services)
      expect(
        { exit: s.child.exitCode, signal: s.child.signalCode },
        `a reference-services process exited:\n${s.output().slice(-2000)}`,
      ).to.deep.equal({ exit: null, signal: null });
    expect(gw.child.exitCode, 'the gateway exited').to.equal(null);
    const failures = load.seen.filter((s) => s.status >= 300);
    const unexpected = failures.filter(
      (s) => !(s.retryAfter && (s.status === 503 || (s.status === 409 && s.conflictingField === 'Idempotency-Key'))),
    );
    expect(unexpected, "failures other than 503 (or a keyed retry's 409), both with Retry-After").to.deep.equal([]);
    // A service that held a request past its deadline would show as the gateway's 504, which the line above refuses.
    expect(load.created).to.have.length(CREATES);
    const { rows } = await pool.query<{ user_id: string; email: string }>(
      "select user_id, email from users where email like $1 || '-%'",
      [phase],
    );
    expect(rows.length, 'one user per create').to.equal(CREATES);
    const byEmail = new Map(rows.map((r) => [r.email, r.user_id]));
    for (const c of load.created)
      expect(byEmail.get(c.email), `the 201 of ${c.email} names its user`).to.equal(c.userId);
    const counts: Record<string, number> = {};
    for (const s of failures) counts[`${s.route} ${s.status}`] = (counts[`${s.route} ${s.status}`] ?? 0) + 1;
    const longest = Math.max(...load.seen.map((s) => s.end - s.start));
    console.log(
      `      ${phase}: ${load.seen.length} answers, the longest in ${longest} ms; failures ${JSON.stringify(counts)}`,
    );
  }

  /** How long after `since` the first request that started then was answered with success, per route. */
  function recoveredAfter(load: Load, since: number): Record<string, number> {
    const out: Record<string, number> = {};
    for (const route of ['create', 'read'] as const) {
      const first = load.seen
        .filter((s) => s.route === route && s.start >= since && s.status < 300)
        .sort((a, b) => a.end - b.end)[0];
      out[route] = first ? first.end - since : Infinity;
    }
    return out;
  }

  it('connections cut twice under load: every failure 503 with Retry-After, nothing lost or doubled', async () => {
    const load = new Load(gw.baseUrl, 'cut');
    const cuts: number[] = [];
    const faults = (async () => {
      for (const at of [8, 18]) {
        while (load.answered < at && load.created.length < CREATES) await sleep(20);
        proxy.killAll();
        cuts.push(Date.now());
      }
    })();
    await load.run();
    await faults;
    expect(cuts).to.have.length(2);
    await expectSound(load, 'cut');
  });

  it(`stalled for longer than the ${DEADLINE_MS} ms deadline: 503 before the deadline, recovered within 10 s of its return`, async () => {
    const load = new Load(gw.baseUrl, 'stall');
    let resumedAt = 0;
    let stalledAt = 0;
    const faults = (async () => {
      while (load.answered < 4) await sleep(20);
      stalledAt = Date.now();
      proxy.stall();
      await sleep(DEADLINE_MS + 2500);
      resumedAt = Date.now();
      proxy.resume();
    })();
    await load.run();
    await faults;
    // Answered while the stall lasted, long enough after its start that the request met it (one in flight then too).
    const during = load.seen.filter((s) => s.end >= stalledAt + 1000 && s.end <= resumedAt);
    const timeline = () =>
      load.seen.map((s) => `${s.route} ${s.status} ${s.start - stalledAt}..${s.end - stalledAt}`).join('\n');
    expect(
      during.length,
      `requests during the stall (resumed at ${resumedAt - stalledAt}):\n${timeline()}`,
    ).to.be.greaterThan(0);
    expect(
      during.filter((s) => s.status !== 503),
      'every answer during the stall is 503',
    ).to.deep.equal([]);
    const recovered = recoveredAfter(load, resumedAt);
    expect(recovered.create, 'a create succeeded within 10 s').to.be.below(RECOVERY_MS);
    expect(recovered.read, 'a read succeeded within 10 s').to.be.below(RECOVERY_MS);
    await expectSound(load, 'stall');
  });

  it('restarted (every connection cut, refused for 3 s, then accepted): 503 meanwhile, recovered within 10 s', async () => {
    const load = new Load(gw.baseUrl, 'restart');
    let acceptedAt = 0;
    const faults = (async () => {
      while (load.answered < 4) await sleep(20);
      proxy.refusing = true;
      proxy.killAll();
      await sleep(3000);
      acceptedAt = Date.now();
      proxy.refusing = false;
    })();
    await load.run();
    await faults;
    const recovered = recoveredAfter(load, acceptedAt);
    expect(recovered.create, 'a create succeeded within 10 s').to.be.below(RECOVERY_MS);
    expect(recovered.read, 'a read succeeded within 10 s').to.be.below(RECOVERY_MS);
    expect(
      load.seen.filter((s) => s.end > acceptedAt + RECOVERY_MS && s.status === 503),
      'no 503 10 s after the return',
    ).to.deep.equal([]);
    await expectSound(load, 'restart');
  });
});
