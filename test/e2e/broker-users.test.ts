import { UserStore } from '../../examples/users-service/store';
import { openDatabase } from '../../examples/storage';
import type { Database } from '../../examples/storage/database';
import { createTestDatabase, type TestDatabase } from '../support/databases';
import { expect } from 'chai';
import * as amqp from 'amqplib';
import { startGateway, eventually, type GatewayProcess } from '../support/gateway-process';
import { uniquePrefix } from '../support/env';
import { httpAs } from '../support/http';
import { rogueContract } from '../support/rogue';
import { createBrokerUsers, refusal, serveNotes, type BrokerUsers } from '../support/broker-users';
import { AmqpTransport } from '../../plugin/bus/amqp';
import { startUsersService } from '../../examples/users-service';
import type { RunningService } from '../../sdk';

const admin = httpAs(['admin:all', 'users:read']);

/**
 * Per-service broker users from the generated definitions, caps included, imported into a vhost of the run's own on
 * the real RabbitMQ with rabbitmqctl and deleted afterwards: the broker itself keeps a rogue user (here: another service's) from announcing for
 * users-service or reading its requests, while the real service works with its least-privilege user.
 */
describe('per-service broker users (generated definitions, rabbitmqctl import_definitions)', function () {
  this.timeout(90_000);
  const prefix = uniquePrefix('trust');
  let brokerUsers: BrokerUsers | undefined;
  const user = (name: string) => brokerUsers!.user(name);
  const url = (name: string) => brokerUsers!.url(name);
  let gw: GatewayProcess | undefined;
  let transport: AmqpTransport | undefined;
  let users: RunningService | undefined;
  let database: TestDatabase | undefined;
  let db: Database | undefined;
  let notes: { stop(): Promise<void> } | undefined;
  let savedGatewayUser: string | undefined;
  /** The callers whose requests reached the notes handler. */
  const handled: string[] = [];

  before(async () => {
    // A vhost of its own, so that the caps (operator policies, user and vhost limits) are imported too.
    brokerUsers = await createBrokerUsers(prefix, ['users-service', 'rogue-service', 'notes-service'], [], {
      ownVhost: true,
    });
    gw = await startGateway(brokerUsers.gatewayEnv());
    // The users service takes requests from the gateway's user through the SDK's default (BUS_GATEWAY_USER).
    savedGatewayUser = process.env.BUS_GATEWAY_USER;
    process.env.BUS_GATEWAY_USER = user('gateway');
    transport = new AmqpTransport(url('users-service'), { prefix });
    await transport.start();
    database = await createTestDatabase('brokerusers');
    db = await openDatabase({ databaseUrl: database.url, dataDir: '' });
    users = await startUsersService(transport, { store: new UserStore(db), bcryptRounds: 4 });
    notes = await serveNotes(brokerUsers, prefix, (ctx) => {
      handled.push(String(ctx.user?.userId));
      return [`for ${ctx.user?.userId}`];
    });
  });

  /** GET `path` through the gateway as an administrator, once it answers 200 (the services announce asynchronously). */
  const answered = (path: string) =>
    eventually(async () => {
      const r = await admin('GET', `${gw!.baseUrl}${path}`);
      expect(r.status).to.equal(200);
      return r;
    }, 15_000);

  after(async () => {
    await notes?.stop();
    await users?.stop().catch(() => undefined);
    await transport?.close().catch(() => undefined);
    await db?.close().catch(() => undefined);
    await database?.drop().catch(() => undefined);
    await gw?.stop().catch(() => undefined);
    await brokerUsers?.remove();
    if (savedGatewayUser === undefined) delete process.env.BUS_GATEWAY_USER;
    else process.env.BUS_GATEWAY_USER = savedGatewayUser;
  });

  it('the real service works with its own user: declares, binds and consumes its queue, replies, announces', async () => {
    expect((await answered('/api/users')).body).to.be.an('object');
    expect(gw!.output()).to.not.include('announcements are unauthenticated');
  });

  it('a rogue broker user cannot publish announce.users-service', async () => {
    const withdrawal = Buffer.from(JSON.stringify({ service: 'users-service', instanceId: 'x', withdrawn: true }));
    const publish = (exchange: string) =>
      refusal(url('rogue-service'), async (ch) => {
        ch.publish(exchange, 'announce.users-service', withdrawal);
        await ch.waitForConfirms();
      });
    // Not with that key on its own announcement exchange, not on the users service's, not on the discovery exchange.
    expect(await publish(`${prefix}.announcements.rogue-service`)).to.match(/ACCESS_REFUSED.*announce\.users-service/);
    expect(await publish(`${prefix}.announcements.users-service`)).to.match(/ACCESS_REFUSED.*announcements\.users/);
    expect(await publish(`${prefix}.discovery`)).to.match(/ACCESS_REFUSED.*discovery/);
  });

  it('a rogue broker user cannot claim to be the users-service user (user_id is checked by the broker)', async () => {
    const reason = await refusal(url('rogue-service'), async (ch) => {
      ch.publish(`${prefix}.announcements.rogue-service`, 'announce.rogue-service', Buffer.from('{}'), {
        userId: user('users-service'),
      });
      await ch.waitForConfirms();
    });
    expect(reason).to.match(/PRECONDITION_FAILED.*user_id/);
  });

  it('a rogue broker user cannot consume the users work queue, nor publish requests', async () => {
    expect(
      await refusal(url('rogue-service'), (ch) => ch.consume(`${prefix}.svc.users-service`, () => undefined)),
    ).to.match(/ACCESS_REFUSED/);
    expect(
      await refusal(url('rogue-service'), async (ch) => {
        ch.publish(`${prefix}.requests`, 'users-service', Buffer.from('{"input":{}}'));
        await ch.waitForConfirms();
      }),
    ).to.match(/ACCESS_REFUSED/);
    expect(await refusal(url('rogue-service'), (ch) => ch.deleteExchange(`${prefix}.requests`))).to.match(
      /ACCESS_REFUSED/,
    );
  });

  it('announcements without the service user are refused by the gateway (guest, or no user_id)', async () => {
    const guest = brokerUsers!.guestUrl;
    const body = Buffer.from(
      JSON.stringify({
        service: 'users-service',
        instanceId: 'spoof',
        ttlMs: 60_000,
        contracts: [rogueContract('ListUsersQuery', 'users-service', { public: true })],
      }),
    );
    expect(
      await refusal(guest, async (ch) => {
        ch.publish(`${prefix}.announcements.users-service`, 'announce.users-service', body);
        ch.publish(`${prefix}.announcements.users-service`, 'announce.users-service', body, { userId: 'guest' });
        await ch.waitForConfirms();
      }),
    ).to.equal('allowed'); // guest still exists on this test broker; production deletes it
    await eventually(async () => {
      expect(gw!.output()).to.include(
        'refused announcement for service users-service instance spoof: it carries no broker user (user_id)',
      );
      expect(gw!.output()).to.include(
        `refused announcement for service users-service instance spoof: broker user guest may not announce for users-service (expected ${user('users-service')})`,
      );
    });
    const anonymous = await fetch(`${gw!.baseUrl}/api/users`);
    expect(anonymous.status).to.equal(401);
  });

  it('the rogue user announcing its own service cannot take the users routes', async () => {
    const conn = await amqp.connect(url('rogue-service'));
    const ch = await conn.createConfirmChannel();
    ch.publish(
      `${prefix}.announcements.rogue-service`,
      'announce.rogue-service',
      Buffer.from(
        JSON.stringify({
          service: 'rogue-service',
          instanceId: 'r1',
          ttlMs: 60_000,
          contracts: [rogueContract('ListUsersQuery', 'rogue-service', { public: true })],
        }),
      ),
      { userId: user('rogue-service') },
    );
    await ch.waitForConfirms();
    await conn.close();
    await eventually(async () =>
      expect(gw!.output()).to.include(
        'refused ListUsersQuery from rogue-service: message type is held by users-service',
      ),
    );
    expect((await fetch(`${gw!.baseUrl}/api/users`)).status).to.equal(401);
  });

  it('a rogue user cannot publish to the notes work queue; one another user sends there is dropped, unanswered', async () => {
    expect((await answered('/api/notes')).body).to.deep.equal(['for test-admin']);
    const forged = JSON.stringify({
      userId: 'root',
      email: 'root@example.com',
      name: 'root',
      permissions: ['admin:all'],
    });
    const props = {
      type: 'ListNotesQuery',
      replyTo: 'amq.rabbitmq.reply-to',
      correlationId: 'c1',
      headers: { user: forged },
    };
    // Services reply through P.replies: no service user may use the default exchange, which reaches every queue.
    expect(
      await refusal(url('rogue-service'), async (ch) => {
        ch.publish('', `${prefix}.svc.notes-service`, Buffer.from('{"input":{}}'), {
          ...props,
          userId: user('rogue-service'),
        });
        await ch.waitForConfirms();
      }),
    ).to.match(/ACCESS_REFUSED/);
    // guest still exists on this test broker (production deletes it) and may: the service drops what it sends.
    const conn = await amqp.connect(brokerUsers!.guestUrl);
    try {
      const ch = await conn.createChannel();
      const replies: unknown[] = [];
      await ch.consume('amq.rabbitmq.reply-to', (m) => m && replies.push(m.content.toString()), { noAck: true });
      ch.publish('', `${prefix}.svc.notes-service`, Buffer.from('{"input":{}}'), { ...props, userId: 'guest' });
      await new Promise((r) => setTimeout(r, 1000));
      expect(replies).to.deep.equal([]);
      expect(handled).to.deep.equal(['test-admin']);
    } finally {
      await conn.close().catch(() => undefined);
    }
  });
});
