import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { PgIdempotencyStore } from '../../sdk';
import { deleteBusTopology, deleteWorkQueues } from '../support/broker';
import { AMQP_URL, uniquePrefix } from '../support/env';
import { eventually, startGateway, type GatewayProcess } from '../support/gateway-process';
import { httpAs, type HttpResult } from '../support/http';
import { createTestDatabase as scratchDatabase } from '../support/databases';
import { startServiceProcess, type ServiceProcess } from '../support/service-process';
import { TcpProxy, viaPort } from '../support/tcp-proxy';

const http = httpAs(['entries:create'], 'importer');
const CREATES = 200;
const CONCURRENCY = 20;
const RETRYABLE = new Set([409, 502, 503, 504]);

interface Outcome {
  key: string;
  statuses: number[];
  final: HttpResult;
}

/**
 * Keyed creates while the broker connections drop: first the gateway's, then the service's (each through a TCP
 * proxy that cuts every socket). The client retries every failed create with its key until it is answered 201, as
 * the error table tells clients to; afterwards exactly one entry exists per create and every answer names it.
 */
describe('idempotency under broker connection faults (RabbitMQ, PostgreSQL)', function () {
  this.timeout(120_000);
  let db: Awaited<ReturnType<typeof scratchDatabase>>;
  let pool: Pool;
  let gw: GatewayProcess;
  let service: ServiceProcess;
  const prefix = uniquePrefix('faults');
  const broker = new URL(AMQP_URL);
  const gatewayProxy = new TcpProxy({ host: broker.hostname, port: Number(broker.port || 5672) });
  const serviceProxy = new TcpProxy({ host: broker.hostname, port: Number(broker.port || 5672) });

  before(async () => {
    db = await scratchDatabase('faults');
    pool = new Pool({ connectionString: db.url, max: 4 });
    // The forced drop after the suite ends idle connections; an idle client's error must not be uncaught.
    pool.on('error', () => undefined);
    await new PgIdempotencyStore(pool).migrate();
    await pool.query(
      'CREATE TABLE entries (id serial PRIMARY KEY, name text NOT NULL, idem_key text, pid integer NOT NULL)',
    );
    const gatewayUrl = viaPort(AMQP_URL, await gatewayProxy.listen());
    const serviceUrl = viaPort(AMQP_URL, await serviceProxy.listen());
    gw = await startGateway({
      BUS_URL: gatewayUrl,
      BUS_PREFIX: prefix,
      START_REFERENCE_SERVICES: 'false',
      REQUEST_TIMEOUT_MS: '10000',
    });
    service = await startServiceProcess('ledger-service', {
      BUS_URL: serviceUrl,
      BUS_PREFIX: prefix,
      DATABASE_URL: db.url,
      DELAY_MS: '30',
    });
    await eventually(async () => {
      const r = await http('POST', `${gw.baseUrl}/api/entries`, { body: { name: 'warm-up' } });
      if (r.status !== 201) throw new Error(`route not ready: ${r.status} ${r.text}`);
    }, 15000);
  });

  after(async () => {
    await service?.stop();
    await gw?.stop();
    await gatewayProxy.close();
    await serviceProxy.close();
    await deleteWorkQueues(AMQP_URL, prefix, ['ledger-service']);
    await deleteBusTopology(AMQP_URL, prefix);
    await pool?.end();
    await db?.drop();
  });

  it(`${CREATES} keyed creates at concurrency ${CONCURRENCY}, the gateway's then the service's connection cut: exactly ${CREATES} entries, every answer the original`, async () => {
    const outcomes: Outcome[] = [];
    let next = 0;
    let answered = 0;
    const cuts: string[] = [];
    const create = async (i: number): Promise<Outcome> => {
      const key = randomUUID();
      const statuses: number[] = [];
      for (let attempt = 0; attempt < 100; attempt++) {
        const r = await http('POST', `${gw.baseUrl}/api/entries`, {
          body: { name: `e${i}` },
          headers: { 'idempotency-key': key },
        });
        statuses.push(r.status);
        if (!RETRYABLE.has(r.status)) return { key, statuses, final: r };
        await new Promise((res) => setTimeout(res, 50 + Math.random() * 100 * Math.min(attempt + 1, 5)));
      }
      throw new Error(`create ${i} never succeeded: ${statuses.join(',')}`);
    };
    const worker = async (): Promise<void> => {
      while (next < CREATES) {
        const outcome = await create(next++);
        outcomes.push(outcome);
        answered += 1;
        // The faults, once a part of the creates is through and others are in flight.
        if (answered === 40) {
          cuts.push('gateway');
          gatewayProxy.killAll();
        }
        if (answered === 120) {
          cuts.push('service');
          serviceProxy.killAll();
        }
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));

    expect(cuts).to.deep.equal(['gateway', 'service']);
    expect(outcomes.length).to.equal(CREATES);
    expect(outcomes.filter((o) => o.final.status !== 201).map((o) => o.statuses)).to.deep.equal([]);
    const { rows } = await pool.query<{ idem_key: string; n: string; id: number }>(
      'SELECT idem_key, count(*) AS n, min(id) AS id FROM entries WHERE idem_key IS NOT NULL GROUP BY idem_key',
    );
    expect(rows.length, 'one entry per create').to.equal(CREATES);
    expect(
      rows.filter((r) => Number(r.n) !== 1),
      'no create ran twice',
    ).to.deep.equal([]);
    const idOf = new Map(rows.map((r) => [r.idem_key, String(r.id)]));
    for (const o of outcomes) {
      expect(o.final.body.id, `the answer of ${o.key} names its entry`).to.equal(idOf.get(o.key));
      expect(o.final.headers.get('location')).to.equal(`/api/entries/${idOf.get(o.key)}`);
    }
    const retried = outcomes.filter((o) => o.statuses.length > 1);
    expect(retried.length, 'the cuts hit creates in flight').to.be.greaterThan(0);
    // Requests the service held when its connection dropped were redelivered to it, not left to their deadline.
    expect(
      outcomes.filter((o) => o.statuses.includes(504)).map((o) => o.statuses),
      'none waited for its deadline',
    ).to.deep.equal([]);
    const replayed = outcomes.filter((o) => o.final.headers.get('idempotent-replayed') === 'true');
    console.log(
      `      ${retried.length} creates retried (${retried
        .map((o) => o.statuses.join('>'))
        .slice(0, 6)
        .join(' ')} …), ${replayed.length} answered by replay`,
    );
  });
});
