import { expect } from 'chai';
import { Pool } from 'pg';
import { openDatabase } from '../../examples/storage';
import type { Database } from '../../examples/storage/database';
import { isUnavailable } from '../../examples/storage/postgres';
import { PgIdempotencyStore, REPLY_MARGIN_MS, ServiceError } from '../../sdk';
import { withRequestDeadline } from '../../sdk/deadline';
import { IdempotencyGuard } from '../../sdk/idempotency/guard';
import type { Reply, RequestMessage } from '../../plugin/bus/transport';
import { createTestDatabase, tempDataDir, type TestDatabase } from '../support/databases';
import { eventually } from '../support/gateway-process';
import { TcpProxy, viaPort } from '../support/tcp-proxy';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** What `work` ended with, and after how many milliseconds. */
async function outcome(work: () => Promise<unknown>): Promise<{ error?: unknown; ms: number }> {
  const started = Date.now();
  try {
    await work();
    return { ms: Date.now() - started };
  } catch (error) {
    return { error, ms: Date.now() - started };
  }
}

/** A request's work with `ms` until its deadline, as a service handler runs it. */
function withDeadlineIn<T>(ms: number, work: () => Promise<T>): Promise<T> {
  return withRequestDeadline(Date.now() + ms, work);
}

function expectUnavailable(error: unknown): void {
  expect(error, String(error)).to.be.instanceOf(ServiceError);
  expect((error as ServiceError).code).to.equal('SERVICE_UNAVAILABLE');
  expect((error as ServiceError).fields.retryAfter)
    .to.be.a('number')
    .and.to.be.at.least(1);
}

/**
 * The reference services' PostgreSQL backend through a TCP proxy that cuts, stalls and refuses its connections:
 * nothing is thrown past the database's callers (an uncaught error would fail the test that caused it), every
 * failure to reach the server is SERVICE_UNAVAILABLE with retryAfter within the request's deadline, and the next
 * query after the server is back succeeds.
 */
describe('the PostgreSQL backend when the server is lost, stalled or restarted', function () {
  this.timeout(90_000);
  let server: TestDatabase;
  let data: ReturnType<typeof tempDataDir>;
  let proxy: TcpProxy;
  let db: Database;

  before(async () => {
    server = await createTestDatabase('pgfault');
    data = tempDataDir();
    const pg = new URL(server.url);
    proxy = new TcpProxy({ host: pg.hostname, port: Number(pg.port || 5432) });
    db = await openDatabase({ databaseUrl: viaPort(server.url, await proxy.listen()), dataDir: data.dir });
    await db.query('create table probe (n integer primary key)');
  });
  afterEach(() => {
    proxy.resume();
    proxy.refusing = false;
  });
  after(async () => {
    await proxy?.close();
    await db?.close().catch(() => undefined);
    data?.remove();
    await server?.drop();
  });

  it('answers a connection cut inside a transaction with SERVICE_UNAVAILABLE, rolls it back, and runs the next one', async () => {
    const cut = await outcome(() =>
      db.transaction(async (tx) => {
        await tx.query('insert into probe values (1)');
        proxy.killAll();
        await sleep(100); // the checked-out connection's error arrives while no query runs on it
        await tx.query('insert into probe values (2)');
      }),
    );
    expectUnavailable(cut.error);
    await db.transaction((tx) => tx.query('insert into probe values (3)'));
    expect((await db.query<{ n: number }>('select n from probe order by n')).rows).to.deep.equal([{ n: 3 }]);
  });

  it('answers a cut during a query with SERVICE_UNAVAILABLE, and takes new connections for the cut idle ones', async () => {
    // Fill the pool with idle connections, then cut them all while one query sleeps on the server.
    await Promise.all(Array.from({ length: 5 }, () => db.query('select pg_sleep(0.05)')));
    const sleeping = outcome(() => db.query('select pg_sleep(2)'));
    await sleep(200);
    proxy.killAll();
    expectUnavailable((await sleeping).error);
    // A cut idle connection is dropped as soon as its socket says so: new ones serve at once.
    await sleep(50);
    for (let i = 0; i < 6; i++)
      expect((await db.query<{ one: number }>('select 1 as one')).rows).to.deep.equal([{ one: 1 }]);
  });

  it('answers within the deadline while the server is stalled, queries and transactions alike, then recovers', async () => {
    proxy.stall();
    const deadlineMs = 1500;
    const during = await Promise.all([
      outcome(() => withDeadlineIn(deadlineMs, () => db.query('select 1'))),
      outcome(() =>
        withDeadlineIn(deadlineMs, () => db.transaction((tx) => tx.query('insert into probe values (10)'))),
      ),
      // More than the pool holds: the waiting ones are bounded by the deadline too.
      ...Array.from({ length: 14 }, (_, i) =>
        outcome(() => withDeadlineIn(deadlineMs, () => db.query('select $1::int', [i]))),
      ),
    ]);
    for (const o of during) {
      expectUnavailable(o.error);
      expect(o.ms, 'answered before the deadline, its margin kept').to.be.below(deadlineMs - REPLY_MARGIN_MS + 400);
    }
    await sleep(2000); // stalled for longer than the deadline
    proxy.resume();
    const back = Date.now();
    await eventually(() => withDeadlineIn(3000, () => db.query('select 1')), 10_000, 100);
    expect(Date.now() - back, 'recovered within 10 s').to.be.below(10_000);
  });

  it('answers while the server restarts (connections cut, then refused) and recovers once it accepts', async () => {
    proxy.refusing = true;
    proxy.killAll();
    for (let i = 0; i < 3; i++) {
      const o = await outcome(() =>
        withDeadlineIn(3000, () => db.transaction((tx) => tx.query('insert into probe values (20)'))),
      );
      expectUnavailable(o.error);
      expect(o.ms).to.be.below(2500);
      await sleep(300);
    }
    proxy.refusing = false;
    const back = Date.now();
    await eventually(
      () => withDeadlineIn(3000, () => db.transaction((tx) => tx.query('insert into probe values (21)'))),
      10_000,
      100,
    );
    expect(Date.now() - back, 'recovered within 10 s').to.be.below(10_000);
    expect((await db.query<{ n: number }>('select n from probe where n >= 20 order by n')).rows).to.deep.equal([
      { n: 21 },
    ]);
  });

  it('tells an unreachable server from a refused statement', () => {
    for (const err of [
      new Error('Connection terminated unexpectedly'),
      new Error('Query read timeout'),
      new Error('timeout exceeded when trying to connect'),
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
      Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }),
      Object.assign(new Error('the database system is starting up'), { code: '57P03' }),
      Object.assign(new Error('sorry, too many clients already'), { code: '53300' }),
    ]) {
      expect(isUnavailable(err), err.message).to.equal(true);
    }
    for (const err of [
      Object.assign(new Error('duplicate key value'), { code: '23505' }),
      Object.assign(new Error('syntax error'), { code: '42601' }),
      new TypeError('x is not a function'),
      new ServiceError('NOT_FOUND', 'No such user'),
    ]) {
      expect(isUnavailable(err), err.message).to.equal(false);
    }
  });
});

describe('the idempotency guard on a PostgreSQL store that stalls', function () {
  this.timeout(60_000);
  let server: TestDatabase;
  let proxy: TcpProxy;
  let pool: Pool;

  before(async () => {
    server = await createTestDatabase('pgguard');
    const pg = new URL(server.url);
    proxy = new TcpProxy({ host: pg.hostname, port: Number(pg.port || 5432) });
    // A pool as a service of its own would make it: no timeouts of ours, only the guard's deadline.
    pool = new Pool({ connectionString: viaPort(server.url, await proxy.listen()), max: 2 });
    pool.on('error', () => undefined);
    await new PgIdempotencyStore(pool).migrate();
  });
  after(async () => {
    await proxy?.close();
    await pool?.end().catch(() => undefined);
    await server?.drop();
  });

  it('answers SERVICE_UNAVAILABLE with retryAfter before the deadline, and runs the retry once the store is back', async () => {
    const errors: unknown[] = [];
    const guard = new IdempotencyGuard('ledger', { store: new PgIdempotencyStore(pool) }, (e) => errors.push(e));
    let runs = 0;
    const message: RequestMessage = {
      messageType: 'CreateEntryCommand',
      targetService: 'ledger',
      input: { name: 'a' },
      headers: { correlationId: 'c', requestId: 'r', idempotencyKey: 'k1' },
    };
    const attempt = () =>
      withDeadlineIn(1500, () =>
        guard.run(
          message,
          (out) => ({ ok: true, result: out }),
          async () => {
            runs += 1;
            return { ok: true, result: { id: 'e1' }, status: 201 } as Reply;
          },
        ),
      );
    proxy.stall();
    const started = Date.now();
    const stalled = await attempt();
    expect(Date.now() - started).to.be.below(1500 - REPLY_MARGIN_MS + 400);
    expect(stalled).to.deep.include({ ok: false });
    expect((stalled as { error: unknown } as { error: object }).error).to.deep.include({
      code: 'SERVICE_UNAVAILABLE',
      retryAfter: 1,
    });
    expect(runs).to.equal(0);
    proxy.killAll(); // the stalled connections go; the pool opens new ones
    proxy.resume();
    const done = await eventually(
      async () => {
        const r = await attempt();
        if (!r.ok) throw new Error(JSON.stringify(r));
        return r;
      },
      10_000,
      200,
    );
    expect(done).to.deep.include({ ok: true, status: 201 });
    expect(runs).to.equal(1);
    expect(errors.length).to.be.greaterThan(0);
  });
});
