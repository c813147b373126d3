import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { PgIdempotencyStore } from '../../sdk';
import { deleteWorkQueues } from '../support/broker';
import { AMQP_URL } from '../support/env';
import { eventually, startGateway, type GatewayProcess } from '../support/gateway-process';
import { httpAs, type HttpResult } from '../support/http';
import { createTestDatabase as scratchDatabase } from '../support/databases';
import { startServiceProcess, type ServiceProcess } from '../support/service-process';

const http = httpAs(['entries:create'], 'clerk');
const REQUESTS = 64;

/**
 * Two instances of a service on one work queue, keys in one PostgreSQL store; one instance is killed with SIGKILL
 * while it holds requests. Its requests are redelivered to the other instance, which runs each one that had not
 * committed and replays each one that had: every request is answered 201 before its deadline, and each ran once.
 */
describe('an instance killed under load loses nothing and runs nothing twice (RabbitMQ, PostgreSQL)', function () {
  this.timeout(120_000);
  let db: Awaited<ReturnType<typeof scratchDatabase>>;
  let pool: Pool;
  let gw: GatewayProcess;
  const services: ServiceProcess[] = [];

  before(async () => {
    db = await scratchDatabase('death');
    pool = new Pool({ connectionString: db.url, max: 4 });
    // The forced drop after the suite ends idle connections; an idle client's error must not be uncaught.
    pool.on('error', () => undefined);
    await new PgIdempotencyStore(pool).migrate();
    await pool.query(
      'CREATE TABLE entries (id serial PRIMARY KEY, name text NOT NULL, idem_key text, pid integer NOT NULL)',
    );
    // A deadline far above what the test needs: a request that waited for it would show as a 504.
    gw = await startGateway({ BUS_URL: AMQP_URL, START_REFERENCE_SERVICES: 'false', REQUEST_TIMEOUT_MS: '30000' });
  });

  after(async () => {
    for (const s of services) await s.stop();
    await deleteWorkQueues(AMQP_URL, gw.prefix, ['ledger-service']);
    await gw?.stop();
    await pool?.end();
    await db?.drop();
  });

  it(`${REQUESTS} concurrent creates, one of two instances SIGKILLed while holding some: all 201, each entry once`, async () => {
    const env = { BUS_URL: AMQP_URL, BUS_PREFIX: gw.prefix, DATABASE_URL: db.url, DELAY_MS: '1500', LEASE_MS: '1500' };
    const victim = await startServiceProcess('ledger-service', env);
    const survivor = await startServiceProcess('ledger-service', env);
    services.push(victim, survivor);
    await eventually(async () => {
      const r = await http('POST', `${gw.baseUrl}/api/entries`, { body: { name: 'warm-up' } });
      if (r.status !== 201) throw new Error(`route not ready: ${r.status} ${r.text}`);
    }, 15000);

    const keys: string[] = Array.from({ length: REQUESTS }, () => randomUUID());
    const answers: Promise<HttpResult>[] = keys.map((key, i) =>
      http('POST', `${gw.baseUrl}/api/entries`, { body: { name: `e${i}` }, headers: { 'idempotency-key': key } }),
    );
    // Kill the victim once it is running several of them (its handlers wait 1.5 s before they write).
    await eventually(
      async () => {
        if (runsIn(victim.output()).length < 4) throw new Error('the victim holds nothing yet');
      },
      15000,
      20,
    );
    const heldByVictim = runsIn(victim.output()).filter((k) => keys.includes(k));
    victim.child.kill('SIGKILL');
    const results = await Promise.all(answers);

    const statuses = results.map((r) => r.status);
    expect(
      statuses.filter((s) => s !== 201),
      JSON.stringify(results.filter((r) => r.status !== 201).map((r) => r.text)),
    ).to.deep.equal([]);
    const { rows } = await pool.query<{ idem_key: string; n: string; id: number; pid: number }>(
      'SELECT idem_key, count(*) AS n, min(id) AS id, min(pid) AS pid FROM entries WHERE idem_key IS NOT NULL GROUP BY idem_key',
    );
    expect(rows.length, 'an entry for every request').to.equal(REQUESTS);
    expect(
      rows.filter((r) => Number(r.n) !== 1),
      'no request ran twice',
    ).to.deep.equal([]);
    const byKey = new Map(rows.map((r) => [r.idem_key, r]));
    keys.forEach((key, i) => {
      expect(results[i].body.id, `answer of ${key}`).to.equal(String(byKey.get(key)!.id));
    });
    // The kill did hit requests in flight: some of what the victim held were finished by the survivor.
    expect(heldByVictim.length).to.be.greaterThan(0);
    expect(
      heldByVictim.filter((k) => byKey.get(k)!.pid === survivor.child.pid).length,
      'redelivered to the survivor',
    ).to.be.greaterThan(0);
  });
});

/** The keys a ledger-service instance started handlers for (its `run <key>` lines). */
function runsIn(output: string): string[] {
  return [...output.matchAll(/^run (\S+)$/gm)].map((m) => m[1]);
}
