import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { AmqpTransport } from '../../plugin/bus/amqp';
import { answer, PgIdempotencyStore, serve, ServiceError, type RunningService } from '../../sdk';
import { AMQP_URL } from '../support/env';
import { eventually, startGateway, type GatewayProcess } from '../support/gateway-process';
import { http, httpAs } from '../support/http';
import { createTestDatabase as scratchDatabase } from '../support/databases';

const alice = httpAs(['entries:create'], 'alice');
const bob = httpAs(['entries:create'], 'bob');

/**
 * The SDK's idempotency keys end to end: a gateway process, a test service on RabbitMQ whose keys live in
 * PostgreSQL (a database of this run), and a handler that writes its entry and its answer in one transaction.
 */
describe('idempotency keys through the gateway (RabbitMQ, PostgreSQL store)', function () {
  this.timeout(60000);
  let gw: GatewayProcess;
  let transport: AmqpTransport;
  let db: Awaited<ReturnType<typeof scratchDatabase>>;
  let pool: Pool;
  let running: RunningService;
  /** How many times the handler ran, by entry name. */
  const runs = new Map<string, number>();
  /** Entries whose handler waits until the test lets it go. */
  const gates = new Map<string, Promise<void>>();

  before(async () => {
    db = await scratchDatabase('idem_e2e');
    pool = new Pool({ connectionString: db.url, max: 8 });
    // The forced drop after the suite ends idle connections; an idle client's error must not be uncaught.
    pool.on('error', () => undefined);
    const store = new PgIdempotencyStore(pool);
    await store.migrate();
    await pool.query('CREATE TABLE entries (id text PRIMARY KEY, name text UNIQUE NOT NULL)');
    gw = await startGateway({ BUS_URL: AMQP_URL, START_REFERENCE_SERVICES: 'false' });
    transport = new AmqpTransport(AMQP_URL, { prefix: gw.prefix });
    await transport.start();
    running = await serve({
      transport,
      service: 'ledger-service',
      idempotency: { store },
      operations: [
        {
          contract: {
            messageType: 'CreateEntryCommand',
            inputSchema: {
              type: 'object',
              properties: { name: { type: 'string' }, fail: { type: 'string' } },
              required: ['name'],
            },
            outputSchema: { type: 'object' },
            requiredPermissions: ['entries:create'],
          },
          handle: async (input, ctx) => {
            const name = String(input.name);
            runs.set(name, (runs.get(name) ?? 0) + 1);
            await gates.get(name);
            if (input.fail === 'internal') throw new Error('boom');
            const client = await pool.connect();
            try {
              await client.query('BEGIN');
              const taken = await client.query('SELECT 1 FROM entries WHERE name = $1', [name]);
              if (taken.rows.length > 0)
                throw new ServiceError('RESOURCE_CONFLICT', 'The name is taken', { conflictingField: 'name' });
              const id = randomUUID();
              await client.query('INSERT INTO entries (id, name) VALUES ($1, $2)', [id, name]);
              const out = answer({ id, name, run: runs.get(name) }, { location: `/api/entries/${id}` });
              // The answer is recorded with the entry: both commit, or (a crash before COMMIT) neither.
              await ctx.idempotency?.record(client, out);
              if (input.fail === 'before-commit') throw new Error('crashed before COMMIT');
              await client.query('COMMIT');
              return out;
            } catch (err) {
              await client.query('ROLLBACK');
              throw err;
            } finally {
              client.release();
            }
          },
        },
      ],
    });
    await eventually(async () => {
      const r = await alice('POST', `${gw.baseUrl}/api/entries`, { body: { name: 'warm-up' } });
      if (r.status !== 201) throw new Error(`route not ready: ${r.status} ${r.text}`);
    }, 15000);
  });

  after(async () => {
    await running?.stop();
    await transport?.close();
    await gw?.stop();
    await pool?.end();
    await db?.drop();
  });

  const post = (as: typeof alice, body: Record<string, unknown>, key?: string) =>
    as('POST', `${gw.baseUrl}/api/entries`, { body, headers: key === undefined ? {} : { 'idempotency-key': key } });
  const entries = async (name: string): Promise<number> =>
    (await pool.query('SELECT 1 FROM entries WHERE name = $1', [name])).rows.length;

  it('a repeat with the same key and body gets the first answer (status, body, Location) marked replayed; the handler ran once', async () => {
    const key = randomUUID();
    const first = await post(alice, { name: 'e1' }, key);
    expect(first.status, first.text).to.equal(201);
    expect(first.headers.get('idempotent-replayed')).to.equal(null);
    const again = await post(alice, { name: 'e1' }, `"${key}"`);
    expect(again.status, again.text).to.equal(201);
    expect(again.body).to.deep.equal(first.body);
    expect(again.headers.get('location'))
      .to.equal(first.headers.get('location'))
      .and.to.match(/^\/api\/entries\//);
    expect(again.headers.get('idempotent-replayed')).to.equal('true');
    expect(runs.get('e1')).to.equal(1);
    expect(await entries('e1')).to.equal(1);
  });

  it("the same key with another body is 422; another caller's same key is a key of its own", async () => {
    const key = randomUUID();
    expect((await post(alice, { name: 'e2' }, key)).status).to.equal(201);
    const other = await post(alice, { name: 'e2-other' }, key);
    expect(other.status, other.text).to.equal(422);
    expect(other.body.code).to.equal('VALIDATION_ERROR');
    expect(other.body.validationErrors[0].field).to.equal('Idempotency-Key');
    expect(runs.get('e2-other')).to.equal(undefined);
    const bobs = await post(bob, { name: 'e2-bob' }, key);
    expect(bobs.status, bobs.text).to.equal(201);
    expect(bobs.headers.get('idempotent-replayed')).to.equal(null);
  });

  it('a repeat while the first still runs is 409 with Retry-After; once it is done the repeat is replayed', async () => {
    const key = randomUUID();
    let open!: () => void;
    gates.set('e3', new Promise<void>((r) => (open = r)));
    const first = post(alice, { name: 'e3' }, key);
    await eventually(async () => expect(runs.get('e3')).to.equal(1));
    const during = await post(alice, { name: 'e3' }, key);
    expect(during.status, during.text).to.equal(409);
    expect(during.body.code).to.equal('RESOURCE_CONFLICT');
    expect(during.body.conflictingField).to.equal('Idempotency-Key');
    expect(during.headers.get('retry-after')).to.equal('1');
    open();
    const done = await first;
    expect(done.status).to.equal(201);
    const after = await post(alice, { name: 'e3' }, key);
    expect(after.status).to.equal(201);
    expect(after.body).to.deep.equal(done.body);
    expect(after.headers.get('idempotent-replayed')).to.equal('true');
    expect(runs.get('e3')).to.equal(1);
  });

  it('a refusal (409 of the handler) is an answer too and is replayed; an internal error is not kept, so the retry runs', async () => {
    expect((await post(alice, { name: 'e4' })).status).to.equal(201);
    const key = randomUUID();
    const refused = await post(alice, { name: 'e4' }, key);
    expect(refused.status).to.equal(409);
    const replayed = await post(alice, { name: 'e4' }, key);
    expect(replayed.status).to.equal(409);
    expect(replayed.body.conflictingField).to.equal('name');
    expect(replayed.headers.get('idempotent-replayed')).to.equal('true');
    expect(runs.get('e4')).to.equal(2);

    const key5 = randomUUID();
    expect((await post(alice, { name: 'e5', fail: 'internal' }, key5)).status).to.equal(500);
    expect((await post(alice, { name: 'e5', fail: 'internal' }, key5)).status).to.equal(500);
    expect(runs.get('e5')).to.equal(2);
  });

  it('a handler that dies before COMMIT leaves neither its change nor its answer: the retry runs once more and is kept', async () => {
    const key = randomUUID();
    expect((await post(alice, { name: 'e6', fail: 'before-commit' }, key)).status).to.equal(500);
    expect(await entries('e6')).to.equal(0);
    // The same key with the body of the real retry would be 422: the client retries the very same request.
    const retried = await post(alice, { name: 'e6', fail: 'before-commit' }, key);
    expect(retried.status).to.equal(500);
    expect(runs.get('e6')).to.equal(2);
    const key2 = randomUUID();
    const ok = await post(alice, { name: 'e6' }, key2);
    expect(ok.status).to.equal(201);
    expect((await post(alice, { name: 'e6' }, key2)).headers.get('idempotent-replayed')).to.equal('true');
    expect(await entries('e6')).to.equal(1);
    expect(runs.get('e6')).to.equal(3);
  });

  it('a malformed key is 400 before anything runs; without a key nothing is deduplicated', async () => {
    const bad = await post(alice, { name: 'e7' }, 'has spaces');
    expect(bad.status).to.equal(400);
    expect(bad.body.code).to.equal('VALIDATION_ERROR');
    expect(bad.body.details).to.have.property('Idempotency-Key');
    expect(runs.get('e7')).to.equal(undefined);
    expect((await post(alice, { name: 'e7' })).status).to.equal(201);
    expect((await post(alice, { name: 'e7' })).status).to.equal(409);
    expect(runs.get('e7')).to.equal(2);
    expect(
      (await http('POST', `${gw.baseUrl}/api/entries`, { body: { name: 'e7' }, headers: { 'idempotency-key': 'x' } }))
        .status,
    ).to.equal(401);
  });
});

describe('idempotency keys on the reference users service (embedded bus)', function () {
  this.timeout(60000);
  const admin = httpAs(['admin:all']);
  let gw: GatewayProcess;
  before(async () => {
    gw = await startGateway({ BUS_URL: 'embedded' });
  });
  after(async () => gw?.stop());

  it('a second POST /api/users with the same key is the first 201 again, not a 409', async () => {
    const key = randomUUID();
    const body = { email: `idem-${key}@example.com`, firstName: 'Ida', lastName: 'Em', password: 'long-enough-1' };
    const first = await admin('POST', `${gw.baseUrl}/api/users`, { body, headers: { 'idempotency-key': key } });
    expect(first.status, first.text).to.equal(201);
    const again = await admin('POST', `${gw.baseUrl}/api/users`, { body, headers: { 'idempotency-key': key } });
    expect(again.status, again.text).to.equal(201);
    expect(again.body).to.deep.equal(first.body);
    expect(again.headers.get('location')).to.equal(first.headers.get('location'));
    expect(again.headers.get('idempotent-replayed')).to.equal('true');
    const unkeyed = await admin('POST', `${gw.baseUrl}/api/users`, { body });
    expect(unkeyed.status, 'without a key the duplicate email is refused').to.equal(409);
  });
});
