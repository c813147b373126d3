import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import * as amqp from 'amqplib';
import { UserStore } from '../../examples/users-service/store';
import { openDatabase } from '../../examples/storage';
import type { Database } from '../../examples/storage/database';
import { startUsersService } from '../../examples/users-service';
import { AmqpTransport } from '../../plugin/bus/amqp';
import type { Logger } from '../../plugin/logger';
import type { RunningService } from '../../sdk';
import { createTestDatabase, type TestDatabase } from '../support/databases';
import { closeConnectionsOf, createBrokerUsers, refusal, type BrokerUsers } from '../support/broker-users';
import { startGateway, eventually, type GatewayProcess } from '../support/gateway-process';
import { AMQP_URL, uniquePrefix } from '../support/env';
import { http, httpAs } from '../support/http';
import { mintToken } from '../support/tokens';
import { startReferenceServices, type ReferenceServices } from '../support/reference-services';

/*
 * The strict set-up (a broker user per service from the generated definitions, REQUIRE_ANNOUNCEMENT_USER) attacked
 * with the credential of one low-value service, rogue-service, against the real broker: it can neither receive
 * another service's requests, nor answer them, nor send them requests with a forged caller. And the topology comes
 * back by itself after an operator deletes exchanges and a work queue, under these users and under the shared one.
 */

const admin = httpAs(['admin:all', 'users:read', 'users:create']);
const ADMIN = { email: 'owner@example.com', password: 'owner-password-1' };

function collecting(): Logger & { lines: string[] } {
  const lines: string[] = [];
  return {
    lines,
    debug: () => undefined,
    info: () => undefined,
    warn: (m) => lines.push(m),
    error: (m) => lines.push(m),
  };
}

let token: Promise<string> | undefined;

/** GET `url` as an administrator, given up after 2 s (a request lost with a deleted exchange waits for its deadline). */
async function statusOf(url: string): Promise<number> {
  token ??= mintToken({ sub: 'test-admin', permissions: ['admin:all', 'users:read'] });
  const res = await fetch(url, {
    headers: { authorization: `Bearer ${await token}` },
    signal: AbortSignal.timeout(2000),
  }).catch(() => undefined);
  await res?.arrayBuffer().catch(() => undefined);
  return res?.status ?? 0;
}

/** GETs `url` every 100 ms until stopped; the statuses seen, with when each request started. */
function traffic(url: string): { stop(): Promise<Array<{ at: number; status: number }>> } {
  const seen: Array<{ at: number; status: number }> = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const at = Date.now();
      seen.push({ at, status: await statusOf(url) });
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return seen;
    },
  };
}

/** Deletes exchanges and queues as an operator would (the admin's own connection). */
async function deleteAsOperator(exchanges: string[], queues: string[]): Promise<void> {
  const conn = await amqp.connect(AMQP_URL);
  try {
    for (const op of [
      ...exchanges.map((x) => (ch: amqp.Channel) => ch.deleteExchange(x)),
      ...queues.map((q) => (ch: amqp.Channel) => ch.deleteQueue(q)),
    ]) {
      const ch = await conn.createChannel();
      ch.on('error', () => undefined);
      await op(ch);
      await ch.close().catch(() => undefined);
    }
  } finally {
    await conn.close().catch(() => undefined);
  }
}

/**
 * Deletes P.requests, P.discovery, P.replies, the users service's own exchanges and (`queues`) its work queue as an
 * operator would while `url` is requested every 100 ms; checks that a 200 comes again within 10 s and that every
 * request started after it was answered 200.
 */
async function deleteTopologyUnderTraffic(url: string, prefix: string, queues: string[]): Promise<void> {
  const load = traffic(url);
  await new Promise((r) => setTimeout(r, 300));
  const deletedAt = Date.now();
  await deleteAsOperator(
    [
      ...[`${prefix}.requests`, `${prefix}.discovery`, `${prefix}.replies`],
      ...[`${prefix}.announcements.users-service`, `${prefix}.replies.users-service`],
    ],
    queues,
  );
  await eventually(async () => expect(await statusOf(url)).to.equal(200), 10_000);
  const took = Date.now() - deletedAt;
  const seen = await load.stop();
  expect(took).to.be.lessThan(10_000);
  const after = seen.filter((s) => s.at >= deletedAt + took);
  expect(
    after.every((s) => s.status === 200),
    JSON.stringify(after),
  ).to.equal(true);
}

describe('request and reply owners on the bus (per-service broker users, real RabbitMQ)', function () {
  this.timeout(120_000);
  const prefix = uniquePrefix('owners');
  let users: BrokerUsers | undefined;
  let gw: GatewayProcess | undefined;
  let refs: ReferenceServices | undefined;
  const usersLog = collecting();

  before(async () => {
    users = await createBrokerUsers(prefix, ['users-service', 'auth-service', 'rogue-service']);
    gw = await startGateway(users.gatewayEnv());
    // bcrypt at 10 rounds: a login takes long enough for a forged reply to arrive first.
    refs = await startReferenceServices(users, prefix, gw.baseUrl, {
      label: 'busowners',
      admin: ADMIN,
      bcryptRounds: 10,
      loggers: { users: usersLog, auth: collecting() },
    });
  });

  after(async () => {
    await refs?.stop();
    await gw?.stop().catch(() => undefined);
    await users?.remove();
  });

  const login = () => http('POST', `${gw!.baseUrl}/api/login`, { body: ADMIN });

  it("cannot bind any queue to P.requests for another service's key, and a login reaches no queue of its own", async () => {
    const conn = await amqp.connect(users!.url('rogue-service'));
    try {
      const own = await conn.createChannel();
      // A queue the rogue user may declare (server-named, as its discovery queue), as in the attack on the old direct exchange.
      const { queue } = await own.assertQueue('', { exclusive: true });
      for (const key of ['auth-service', '#', '*', 'auth-service.#', 'users-service']) {
        const ch = await conn.createChannel();
        const closed = new Promise<string>((r) => ch.on('error', (e: Error) => r(e.message)));
        const bound = await ch.bindQueue(queue, `${prefix}.requests`, key).then(
          () => 'bound',
          () => 'refused',
        );
        expect(bound, key).to.equal('refused');
        expect(await closed, key).to.match(/ACCESS_REFUSED/);
      }
      // Its own key is bindable: the refusal above is about the key, not a broken set-up.
      await own.bindQueue(queue, `${prefix}.requests`, 'rogue-service');
      expect((await login()).status).to.equal(200);
      await new Promise((r) => setTimeout(r, 300));
      expect((await own.checkQueue(queue)).messageCount).to.equal(0);
    } finally {
      await conn.close().catch(() => undefined);
    }
  });

  it('may not reply with the captured replyTo; a forged reply another user gets in is dropped; the client gets the real answer', async () => {
    // The strongest rogue: it somehow saw the request (here through an operator's connection on the shared broker).
    const spy = await amqp.connect(AMQP_URL);
    try {
      const watch = await spy.createChannel();
      const { queue } = await watch.assertQueue('', { exclusive: true });
      await watch.bindQueue(queue, `${prefix}.requests`, 'auth-service');
      const captured: amqp.ConsumeMessage[] = [];
      const forge = await spy.createConfirmChannel();
      const forgedBody = Buffer.from(
        JSON.stringify({
          ok: true,
          result: { accessToken: 'issued-by-rogue', refreshToken: 'r', expiresIn: 900, tokenType: 'Bearer' },
        }),
      );
      // Another user that may publish there (guest, standing for a shared credential) answers at once, long before
      // bcrypt is done: as guest and with no user at all.
      await watch.consume(
        queue,
        (msg) => {
          if (msg?.properties.type !== 'AuthenticateCommand') return;
          captured.push(msg);
          const props = { correlationId: msg.properties.correlationId, contentType: 'application/json' };
          forge.publish(`${prefix}.replies`, msg.properties.replyTo, forgedBody, { ...props, userId: 'guest' });
          forge.publish(`${prefix}.replies`, msg.properties.replyTo, forgedBody, props);
        },
        { noAck: true },
      );
      const res = await login();
      expect(res.status, res.text).to.equal(200);
      expect(res.body.accessToken).to.not.equal('issued-by-rogue');
      expect(res.body.accessToken.split('.')).to.have.length(3);
      expect(captured).to.have.length(1);
      // Logged only while the request still waited: the forged replies came first and were dropped.
      await eventually(async () => {
        expect(gw!.output()).to.include(
          `dropped a reply for auth-service published by broker user guest (expected ${users!.user('auth-service')})`,
        );
        expect(gw!.output()).to.include(
          `dropped a reply for auth-service published by no broker user (user_id) (expected ${users!.user('auth-service')})`,
        );
      });
      // The rogue's own user may not even send them: auth-service's reply key is not its own, nor is the default exchange.
      const { replyTo, correlationId } = captured[0]!.properties;
      for (const exchange of [`${prefix}.replies`, '']) {
        expect(
          await refusal(users!.url('rogue-service'), async (ch) => {
            ch.publish(exchange, replyTo, forgedBody, { correlationId, userId: users!.user('rogue-service') });
            await ch.waitForConfirms();
          }),
          exchange || 'amq.default',
        ).to.match(/ACCESS_REFUSED/);
      }
    } finally {
      await spy.close().catch(() => undefined);
    }
  });

  it('may not publish a request straight to P.svc.users-service; one another user gets in reaches no handler and creates no user', async () => {
    const forgedUser = JSON.stringify({
      userId: 'root',
      email: 'root@example.com',
      name: 'root',
      permissions: ['admin:all'],
    });
    const body = Buffer.from(
      JSON.stringify({
        input: {
          email: 'forged-admin@example.com',
          firstName: 'F',
          lastName: 'A',
          password: 'forged-pass-1',
          role: 'admin',
        },
      }),
    );
    const props = {
      type: 'CreateUserCommand',
      replyTo: 'amq.rabbitmq.reply-to',
      contentType: 'application/json',
      headers: { user: forgedUser, correlationId: 'c', requestId: 'r' },
    };
    // The default exchange reaches every queue by name: no service user may publish there.
    expect(
      await refusal(users!.url('rogue-service'), async (ch) => {
        ch.publish('', `${prefix}.svc.users-service`, body, {
          ...props,
          correlationId: 'as-rogue',
          userId: users!.user('rogue-service'),
        });
        await ch.waitForConfirms();
      }),
    ).to.match(/ACCESS_REFUSED/);
    // guest still may on this test broker (production deletes it): the SDK drops what it sends.
    const conn = await amqp.connect(AMQP_URL);
    try {
      const ch = await conn.createChannel();
      const replies: unknown[] = [];
      await ch.consume('amq.rabbitmq.reply-to', (m) => m && replies.push(m.content.toString()), { noAck: true });
      ch.publish('', `${prefix}.svc.users-service`, body, { ...props, correlationId: 'as-guest', userId: 'guest' });
      ch.publish('', `${prefix}.svc.users-service`, body, { ...props, correlationId: 'as-nobody' });
      await eventually(async () => {
        expect(usersLog.lines.join('\n')).to.include(
          `dropped a request to users-service published by broker user guest: requests are accepted from ${users!.user('gateway')} only`,
        );
        expect(usersLog.lines.join('\n')).to.include(
          'dropped a request to users-service published by no broker user (user_id)',
        );
      });
      await new Promise((r) => setTimeout(r, 500));
      expect(replies).to.deep.equal([]);
      expect(await new UserStore(refs!.db).findByEmail('forged-admin@example.com')).to.equal(undefined);
      // The same service still serves the gateway.
      expect((await admin('GET', `${gw!.baseUrl}/api/users`)).status).to.equal(200);
    } finally {
      await conn.close().catch(() => undefined);
    }
  });

  it('still cannot publish to P.requests, consume another queue (work or reply), or delete the exchanges', async () => {
    const rogue = users!.url('rogue-service');
    expect(
      await refusal(rogue, async (ch) => {
        ch.publish(`${prefix}.requests`, 'users-service', Buffer.from('{"input":{}}'));
        await ch.waitForConfirms();
      }),
    ).to.match(/ACCESS_REFUSED/);
    expect(
      await refusal(rogue, async (ch) => {
        ch.publish(`${prefix}.requests`, 'rogue-service', Buffer.from('{"input":{}}'));
        await ch.waitForConfirms();
      }),
    ).to.match(/ACCESS_REFUSED/);
    expect(await refusal(rogue, (ch) => ch.consume(`${prefix}.svc.auth-service`, () => undefined))).to.match(
      /ACCESS_REFUSED/,
    );
    expect(await refusal(rogue, (ch) => ch.consume(`${prefix}.reply.${randomUUID()}`, () => undefined))).to.match(
      /ACCESS_REFUSED/,
    );
    for (const exchange of ['requests', 'discovery', 'replies']) {
      expect(await refusal(rogue, (ch) => ch.deleteExchange(`${prefix}.${exchange}`)), exchange).to.match(
        /ACCESS_REFUSED/,
      );
    }
    expect(await refusal(rogue, (ch) => ch.assertExchange(`${prefix}.requests`, 'topic', { durable: true }))).to.match(
      /ACCESS_REFUSED/,
    );
  });

  it('cannot name an exchange or queue of its own (P.discover.*), so no exchange of its own routes around the topic permissions', async () => {
    const rogue = users!.url('rogue-service');
    // The route closed: an exchange P.discover.evil, bound from P.replies/P.discovery with `#`, would pass any key.
    expect(await refusal(rogue, (ch) => ch.assertExchange(`${prefix}.discover.evil`, 'topic'))).to.match(
      /ACCESS_REFUSED/,
    );
    expect(await refusal(rogue, (ch) => ch.assertQueue(`${prefix}.discover.x`, { exclusive: true }))).to.match(
      /ACCESS_REFUSED/,
    );
    // RabbitMQ reserves amq.: the pattern a service may configure names no exchange nor client-named queue.
    expect(await refusal(rogue, (ch) => ch.assertExchange('amq.gen-evil', 'topic'))).to.match(
      /ACCESS_REFUSED - exchange name .* reserved prefix/,
    );
    expect(await refusal(rogue, (ch) => ch.assertQueue('amq.gen-x', { exclusive: true }))).to.match(
      /ACCESS_REFUSED - queue name .* reserved prefix/,
    );
    // What a service does need: a server-named queue bound to P.discovery with `discover` (and no other key).
    let named = '';
    expect(
      await refusal(rogue, async (ch) => {
        named = (await ch.assertQueue('', { exclusive: true, autoDelete: true })).queue;
        await ch.bindQueue(named, `${prefix}.discovery`, 'discover');
      }),
    ).to.equal('allowed');
    expect(named).to.match(/^amq\.gen-/);
    expect(
      await refusal(rogue, async (ch) => {
        const { queue } = await ch.assertQueue('', { exclusive: true, autoDelete: true });
        await ch.bindQueue(queue, `${prefix}.discovery`, '#');
      }),
    ).to.match(/ACCESS_REFUSED - access to topic '#'/);
  });

  // The work queue comes with the definitions here, and the service's user may not declare it: an operator who
  // deletes it imports the definitions again (the shared-credential case below restores it by itself).
  it("restores the topology within 10 s after P.requests, P.discovery, P.replies and the service's own exchanges are deleted, with nothing restarted", async () => {
    const { body } = await admin('GET', `${gw!.baseUrl}/api/users?limit=1`);
    const url = `${gw!.baseUrl}/api/users/${body.users[0].userId}`;
    expect((await admin('GET', url)).status).to.equal(200);
    await deleteTopologyUnderTraffic(url, prefix, []);
    expect(gw!.child.exitCode).to.equal(null);
    expect(refs!.transports.map((t) => t.state())).to.deep.equal(['up', 'up']);
    // Announcements flow again too: the login route (another service) answers.
    expect((await login()).status).to.equal(200);
  });

  it("hears discovery requests on the SDK's server-named queue under a service's own user, also after P.discovery is deleted and a reconnect", async () => {
    let heard = 0;
    const sub = await refs!.transports[1]!.onDiscoveryRequest(() => void heard++);
    try {
      // As the gateway: a fresh connection each time, since publishing to a deleted exchange closes the channel.
      const discover = () =>
        refusal(users!.url('gateway'), async (ch) => {
          ch.publish(`${prefix}.discovery`, 'discover', Buffer.from('{}'));
          await ch.waitForConfirms();
        });
      const heardAgain = async (): Promise<void> => {
        const before = heard;
        await eventually(async () => {
          expect(await discover()).to.equal('allowed');
          expect(heard).to.be.greaterThan(before);
        }, 10_000);
      };
      await heardAgain();
      await deleteAsOperator([`${prefix}.discovery`], []);
      // The gateway re-declares the exchange; the listener re-binds the queue whose name the broker gave it.
      await heardAgain();
      // After a reconnect the listener declares a new server-named queue and binds the name of the new answer.
      expect(await closeConnectionsOf(users!.user('auth-service'))).to.be.greaterThan(0);
      await heardAgain();
      await eventually(async () => expect(refs!.transports[1]!.state()).to.equal('up'));
    } finally {
      await sub.close();
    }
  });
});

describe('topology restored under the shared credential (guest for the gateway and the service)', function () {
  this.timeout(120_000);
  let gw: GatewayProcess | undefined;
  let database: TestDatabase | undefined;
  let db: Database | undefined;
  let transport: AmqpTransport | undefined;
  let service: RunningService | undefined;
  let savedGatewayUser: string | undefined;

  before(async () => {
    gw = await startGateway({ BUS_URL: AMQP_URL, START_REFERENCE_SERVICES: 'false' });
    // The SDK's default on guest: requests published as guest, which is what the gateway stamps.
    savedGatewayUser = process.env.BUS_GATEWAY_USER;
    delete process.env.BUS_GATEWAY_USER;
    database = await createTestDatabase('busguest');
    db = await openDatabase({ databaseUrl: database.url, dataDir: '' });
    transport = new AmqpTransport(AMQP_URL, { prefix: gw.prefix, logger: collecting() });
    await transport.start();
    service = await startUsersService(transport, { store: new UserStore(db), bcryptRounds: 4 });
  });
  after(async () => {
    await service?.stop().catch(() => undefined);
    await transport?.close().catch(() => undefined);
    await db?.close().catch(() => undefined);
    await database?.drop().catch(() => undefined);
    await gw?.stop();
    if (savedGatewayUser !== undefined) process.env.BUS_GATEWAY_USER = savedGatewayUser;
  });

  it('answers 200 again within 10 s after P.requests, P.discovery, P.replies and the users work queue are deleted', async () => {
    const prefix = gw!.prefix;
    const url = `${gw!.baseUrl}/api/users`;
    await eventually(async () => expect((await admin('GET', url)).status).to.equal(200), 15_000);
    await deleteTopologyUnderTraffic(url, prefix, [`${prefix}.svc.users-service`]);
    expect(gw!.child.exitCode).to.equal(null);
    expect(transport!.state()).to.equal('up');
  });
});
