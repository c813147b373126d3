import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run as brokerDefinitions } from '../../plugin/cli/contracts-broker-definitions';
import { RabbitCluster, rabbitmqBin } from '../support/rabbitmq-cluster';
import * as amqp from 'amqplib';
import { startGateway, eventually, type GatewayProcess } from '../support/gateway-process';
import { uniquePrefix } from '../support/env';
import { httpAs } from '../support/http';
import { createBrokerUsers, rabbitmqctl, serveNotes, type BrokerUsers } from '../support/broker-users';

const admin = httpAs(['admin:all']);
const KiB = 1024;
const MiB = 1024 * KiB;

/** Rows of `rabbitmqctl <command> … --formatter json`. */
async function rows<T>(args: string[]): Promise<T[]> {
  return JSON.parse(await rabbitmqctl([...args, '--formatter', 'json'])) as T[];
}

/** Why the broker refused `action` (a closed channel or connection), or 'allowed'. */
async function refused(action: () => Promise<unknown>): Promise<string> {
  try {
    await action();
    return 'allowed';
  } catch (err) {
    return (err as Error).message;
  }
}

/**
 * The caps of the generated definitions (operator policies on every queue a service user may declare, user and
 * vhost limits), imported into a vhost of the run's own on the real RabbitMQ, sized for one instance of each service
 * and one gateway (the tightest they allow): what a service's credential can make the broker hold is bounded, what
 * it leaves behind goes, and the gateway and an SDK service still work within them.
 */
describe('caps on the broker side (generated definitions, rabbitmqctl import_definitions)', function () {
  this.timeout(120_000);
  const prefix = uniquePrefix('caps');
  let brokerUsers: BrokerUsers | undefined;
  const user = (name: string) => brokerUsers!.user(name);
  const url = (name: string) => brokerUsers!.url(name);
  let gw: GatewayProcess | undefined;
  let notes: { stop(): Promise<void> } | undefined;
  const opened: amqp.ChannelModel[] = [];
  /** The queues the rogue credential declared, to be gone after it left. */
  const leftovers: string[] = [];
  /** A connection of `name`'s user, closed after the test at the latest. */
  const connect = async (name: string): Promise<amqp.ChannelModel> => {
    const conn = await amqp.connect(url(name));
    conn.on('error', () => undefined);
    opened.push(conn);
    return conn;
  };
  // Ready messages: what max-length and max-length-bytes count (a consumer's unacked ones are not).
  const queues = () =>
    rows<{ name: string; messages_ready: number; message_bytes_ready: number }>([
      'list_queues',
      '-p',
      brokerUsers!.vhost,
      'name',
      'messages_ready',
      'message_bytes_ready',
    ]);

  before(async () => {
    brokerUsers = await createBrokerUsers(
      prefix,
      ['notes-service', 'rogue-service'],
      ['--max-instances', '1', '--max-gateways', '1'],
      { ownVhost: true },
    );
    gw = await startGateway(brokerUsers.gatewayEnv());
    notes = await serveNotes(brokerUsers, prefix, () => ['a note']);
  });

  /** Closes the test's own connections, waiting at most 5 s for each (deleting the vhost ends any left). */
  const closeOpened = async () => {
    for (const conn of opened.splice(0))
      await Promise.race([conn.close().catch(() => undefined), new Promise((r) => setTimeout(r, 5000).unref())]);
  };

  afterEach(closeOpened);

  after(async () => {
    await closeOpened();
    await notes?.stop();
    await gw?.stop().catch(() => undefined);
    await brokerUsers?.remove();
  });

  it('imports the operator policies, the user limits and the vhost limits', async () => {
    const vhost = brokerUsers!.vhost;
    const policies = await rows<{ name: string; pattern: string; definition: string }>([
      'list_operator_policies',
      '-p',
      vhost,
    ]);
    expect(Object.fromEntries(policies.map((p) => [p.name, [p.pattern, JSON.parse(p.definition)]]))).to.deep.equal({
      // The work queues come with the definitions: bounded, never expired (the services cannot declare them again).
      [`${prefix}-work-queue-caps`]: [`^${prefix}\\.svc\\.`, { 'max-length': 10_000, 'max-length-bytes': 64 * MiB }],
      [`${prefix}-server-named-queue-caps`]: [
        '^(amq\\.gen-.*)$',
        { 'max-length': 100, 'max-length-bytes': MiB, expires: 15_000, 'message-ttl': 60_000 },
      ],
    });
    // Two connections per process (one may linger while its replacement connects), 16 channels each (+1 per service).
    expect(
      JSON.parse(await rabbitmqctl(['list_user_limits', '--user', user('rogue-service')]).then(lastLine)),
    ).to.deep.equal({
      'max-connections': 2,
      'max-channels': 32,
    });
    expect(JSON.parse(await rabbitmqctl(['list_user_limits', '--user', user('gateway')]).then(lastLine))).to.deep.equal(
      {
        'max-connections': 2,
        'max-channels': 36,
      },
    );
    expect(JSON.parse(await rabbitmqctl(['list_vhost_limits', '-p', vhost]).then(lastLine))).to.deep.equal({
      'max-connections': 6,
      'max-queues': 16,
    });
  });

  it('the gateway and an SDK service work within the tightest caps, on fewer channels than allowed', async () => {
    await eventually(async () => {
      const r = await admin('GET', `${gw!.baseUrl}/api/notes`);
      expect(r.status).to.equal(200);
      expect(r.body).to.deep.equal(['a note']);
    }, 15_000);
    const channels = await rows<{ user: string; connection: string }>(['list_channels', 'user', 'connection']);
    const count = (name: string) => channels.filter((c) => c.user === user(name)).length;
    const connections = (name: string) =>
      new Set(channels.filter((c) => c.user === user(name)).map((c) => c.connection)).size;
    console.log(
      `      channels in use: gateway ${count('gateway')} on ${connections('gateway')} connection(s), notes-service ${count('notes-service')} on ${connections('notes-service')}`,
    );
    expect(connections('gateway')).to.equal(1);
    expect(connections('notes-service')).to.equal(1);
    // The limits count each process twice (reconnects): one process stays within half of them.
    expect(count('gateway')).to.be.within(1, 18);
    expect(count('notes-service')).to.be.within(1, 16);
  });

  it("holds its work queue and the queues a service's credential declares to the caps, whatever their arguments", async function () {
    this.timeout(240_000);
    const rogue = await (await connect('rogue-service')).createChannel();
    const requests = `${prefix}.requests`;
    // Server-named, durable, no expiry, no bounds: the leftover of the issue.
    const { queue: plain } = await rogue.assertQueue('', { durable: true, exclusive: false, autoDelete: false });
    await rogue.bindQueue(plain, requests, 'rogue-service');
    // Its work queue, as the definitions declared it (the credential may not declare it again: test/e2e/bus-lanes).
    const work = `${prefix}.svc.rogue-service`;
    leftovers.push(plain);
    // A consumer that takes one message and never acks it: the queues stay in use (an unused one expires in 15 s).
    await rogue.prefetch(1);
    const hold = (queue: string) => rogue.consume(queue, () => undefined);
    await hold(plain);
    await hold(work);

    // What fills them: requests for rogue-service, as the gateway publishes them when callers ask.
    const gateway = await (await connect('gateway')).createConfirmChannel();
    const send = async (n: number, bytes: number) => {
      for (let i = 0; i < n; i += 1) gateway.publish(requests, 'rogue-service', Buffer.alloc(bytes));
      await gateway.waitForConfirms();
    };
    const held = async () => Object.fromEntries((await queues()).map((q) => [q.name, q]));
    await send(10_050, 16);
    await eventually(async () => {
      const q = await held();
      expect(q[work]?.messages_ready).to.equal(10_000); // the oldest dropped
      expect(q[plain]?.messages_ready).to.equal(100);
    }, 30_000);
    await send(70, MiB);
    await eventually(async () => {
      const q = await held();
      expect([q[work]?.messages_ready, q[work]?.message_bytes_ready]).to.deep.equal([64, 64 * MiB]);
      expect([q[plain]?.messages_ready, q[plain]?.message_bytes_ready]).to.deep.equal([1, MiB]);
    }, 30_000);
  });

  it('deletes what the credential left behind once it is gone (15 s without a consumer), and keeps the work queue', async function () {
    if (leftovers.length === 0) this.skip();
    const started = Date.now();
    await eventually(
      async () => {
        const names = new Set((await queues()).map((q) => q.name));
        expect(leftovers.filter((name) => names.has(name))).to.deep.equal([]);
        expect(names.has(`${prefix}.svc.rogue-service`)).to.equal(true);
      },
      60_000,
      500,
    );
    console.log(`      the leftover queues went ${Math.round((Date.now() - started) / 1000)} s after the connection`);
  });

  it('refuses a connection and a channel over the user limits', async () => {
    const first = await connect('rogue-service');
    const second = await connect('rogue-service');
    // The broker closes the connection while opening it (amqplib keeps no reason; the broker's log says "user
    // connection limit (2) is reached"); with one of the two closed, the same connection opens.
    expect(await refused(() => connect('rogue-service'))).to.match(/Expected ConnectionOpenOk; got <ConnectionClose/);
    await second.close();
    await connect('rogue-service');
    for (let i = 0; i < 32; i += 1) await first.createChannel();
    const reason = await refused(() => first.createChannel());
    console.log(`      the 33rd channel: ${reason}`);
    expect(reason).to.match(/Channel ended/); // the broker closes the connection: NOT_ALLOWED, channel limit
  });

  it('refuses a queue over the vhost limit', async () => {
    const ch = await (await connect('rogue-service')).createChannel();
    ch.on('error', () => undefined);
    const before = (await queues()).length;
    let declared = 0;
    const reason = await refused(async () => {
      for (; declared < 20; declared += 1) await ch.assertQueue('', { exclusive: true });
    });
    expect(reason).to.match(/queue limit in vhost '[^']+' \(16\) is reached/);
    expect(before + declared).to.equal(16);
  });
});

/**
 * The other way RabbitMQ takes definitions: `load_definitions` in rabbitmq.conf, at boot, on a node of the test's own
 * (never the machine's): the caps arrive the same way.
 */
describe('caps on the broker side, loaded at boot (load_definitions, a broker node of its own)', function () {
  this.timeout(180_000);
  const bin = rabbitmqBin();
  let cluster: RabbitCluster | undefined;
  let dir: string | undefined;

  after(async () => {
    await cluster?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('imports the operator policies, the user limits and the vhost limits', async function () {
    if (!bin) this.skip();
    dir = mkdtempSync(join(tmpdir(), 'broker-caps-'));
    const file = join(dir, 'definitions.json');
    const args = ['--prefix', 'boot', '--vhost', 'bus', '--gateway-user', 'gw', '--service', 'a'];
    writeFileSync(
      file,
      brokerDefinitions([...args, '--max-instances', '1', '--max-gateways', '1'], {
        BROKER_PASSWORD_GW: 'g',
        BROKER_PASSWORD_A: 'a',
      }),
    );
    cluster = await RabbitCluster.start(bin!, 1, 90_000, `load_definitions = ${file}\n`);
    const node = cluster.nodes[0]!;
    const ctl = (...a: string[]) => cluster!.ctl(node, ['-q', ...a]).then(lastLine);
    const policies = JSON.parse(
      await cluster.ctl(node, ['list_operator_policies', '-p', 'bus', '--formatter', 'json']),
    );
    expect(policies.map((p: { name: string }) => p.name).sort()).to.deep.equal([
      'boot-server-named-queue-caps',
      'boot-work-queue-caps',
    ]);
    expect(JSON.parse(await ctl('list_user_limits', '--user', 'a'))).to.deep.equal({
      'max-connections': 2,
      'max-channels': 32,
    });
    expect(JSON.parse(await ctl('list_vhost_limits', '-p', 'bus'))).to.deep.equal({
      'max-connections': 4,
      'max-queues': 9,
    });
  });

  it("deletes a service user's durable leftover queue after a restart of the node (stop_app, start_app)", async function () {
    if (!cluster) this.skip();
    const node = cluster!.nodes[0]!;
    const names = async () =>
      (
        JSON.parse(await cluster!.ctl(node, ['list_queues', '-p', 'bus', 'name', '--formatter', 'json'])) as Array<{
          name: string;
        }>
      ).map((q) => q.name);
    const conn = await amqp.connect(`amqp://a:a@127.0.0.1:${node.amqpPort}/bus`);
    conn.on('error', () => undefined);
    let queue: string;
    try {
      const ch = await conn.createChannel();
      queue = (await ch.assertQueue('', { durable: true, exclusive: false, autoDelete: false })).queue;
      await ch.consume(queue, () => undefined); // in use until the node stops
      await cluster!.ctl(node, ['stop_app']);
    } finally {
      await Promise.race([conn.close().catch(() => undefined), new Promise((r) => setTimeout(r, 5000).unref())]);
    }
    await cluster!.ctl(node, ['start_app']);
    const started = Date.now();
    const afterStart = await names();
    // Recovered (durable), unless the node took 15 s to list it; either way gone within the expiry after the start.
    if (Date.now() - started < 10_000) expect(afterStart).to.include(queue);
    await eventually(async () => expect(await names()).to.not.include(queue), 60_000, 1000);
    console.log(`      the durable leftover went ${Math.round((Date.now() - started) / 1000)} s after start_app`);
  });
});

/** The value a `list_*_limits` command prints on its last line. */
function lastLine(text: string): string {
  return text.trim().split('\n').at(-1) ?? '';
}
