import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as amqp from 'amqplib';
import { startGateway, eventually, type GatewayProcess } from '../support/gateway-process';
import { AMQP_URL, freePort, IMAGE_NODE_OPTIONS, uniquePrefix } from '../support/env';
import { httpAs } from '../support/http';
import { probeLoop } from '../support/flood';
import { createBrokerUsers, refusal, type BrokerUsers } from '../support/broker-users';
import { AmqpTransport } from '../../plugin/bus/amqp';
import { serve, type RunningService } from '../../sdk';

/** What `rabbitmqctl list_queues name arguments` prints (the leak check wraps execFile: no util.promisify here). */
function queueArguments(): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      'rabbitmqctl',
      ['-q', '--no-table-headers', 'list_queues', 'name', 'arguments'],
      { timeout: 30_000 },
      (err, stdout) => (err ? reject(err) : resolve(String(stdout))),
    );
  });
}
const admin = httpAs(['admin:all']);

/** The resident set of a process, in bytes (Linux). */
function rssOf(pid: number): number {
  const kb = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb ?? 0) * 1024;
}

/**
 * Replies go to the exchange P.replies, never through the default exchange: under the strict set-up (a services
 * file, a broker user per service) one service's credential can neither reach another service's work queue nor
 * its replies, and a flood of its own replies stays in its own bounded reply queue. Against the real broker, with a
 * 128 MB-heap gateway as the image runs it.
 */
describe('one service flooding the reply exchange (per-service broker users, 128 MB heap)', function () {
  this.timeout(180_000);
  const prefix = uniquePrefix('replyflood');
  let users: BrokerUsers | undefined;
  let gw: GatewayProcess | undefined;
  const transports: AmqpTransport[] = [];
  const running: RunningService[] = [];
  let metricsPort = 0;

  before(async () => {
    users = await createBrokerUsers(prefix, {
      'flood-service': ['ListFloodsQuery'],
      'steady-service': ['ListSteadiesQuery'],
    });
    metricsPort = await freePort();
    gw = await startGateway({
      ...users.gatewayEnv(),
      METRICS_PORT: String(metricsPort),
      NODE_OPTIONS: IMAGE_NODE_OPTIONS,
    });
    for (const [service, messageType, answer] of [
      ['flood-service', 'ListFloodsQuery', 'flood'],
      ['steady-service', 'ListSteadiesQuery', 'steady'],
    ] as const) {
      const transport = new AmqpTransport(users.url(service), { prefix });
      transports.push(transport);
      await transport.start();
      running.push(
        await serve({
          transport,
          service,
          acceptRequestsFrom: users.user('gateway'),
          operations: [
            {
              contract: {
                messageType,
                inputSchema: { type: 'object' },
                outputSchema: { type: 'array' },
                requiredPermissions: [],
              },
              handle: () => [answer],
            },
          ],
        }),
      );
    }
  });

  after(async () => {
    for (const s of running) await s.stop().catch(() => undefined);
    for (const t of transports) await t.close().catch(() => undefined);
    await gw?.stop().catch(() => undefined);
    await users?.remove();
  });

  it("may neither publish to another service's work queue nor reply with its key; floods of its own replies delay no other route", async () => {
    const steadyRoute = `${gw!.baseUrl}/api/steadies`;
    const floodRoute = `${gw!.baseUrl}/api/floods`;
    await eventually(async () => expect((await admin('GET', steadyRoute)).body).to.deep.equal(['steady']), 15_000);
    // The reply keys, as a service sees them in its requests' reply_to (read here on an operator's connection).
    const spy = await amqp.connect(AMQP_URL);
    const replyTo: Record<string, string> = {};
    try {
      const ch = await spy.createChannel();
      const { queue } = await ch.assertQueue('', { exclusive: true });
      for (const key of ['flood-service', 'steady-service']) await ch.bindQueue(queue, `${prefix}.requests`, key);
      await ch.consume(queue, (msg) => msg && (replyTo[msg.fields.routingKey] = msg.properties.replyTo as string), {
        noAck: true,
      });
      await eventually(async () => expect((await admin('GET', floodRoute)).body).to.deep.equal(['flood']), 15_000);
      expect((await admin('GET', steadyRoute)).status).to.equal(200);
      await eventually(async () =>
        expect(Object.keys(replyTo).sort()).to.deep.equal(['flood-service', 'steady-service']),
      );
    } finally {
      await spy.close().catch(() => undefined);
    }
    expect(replyTo['flood-service']).to.match(new RegExp(`^${prefix}\\.reply\\.[0-9a-f-]{36}\\.flood-service$`));

    // The flood user: no default exchange at all (no work queue, no reply queue by name), no reply with steady's key.
    const flood = users!.url('flood-service');
    const floodUser = users!.user('flood-service');
    const junk = Buffer.from(JSON.stringify({ ok: true, result: ['x'.repeat(1000)] }));
    expect(
      await refusal(flood, async (ch) => {
        ch.publish('', `${prefix}.svc.steady-service`, junk, { userId: floodUser });
        await ch.waitForConfirms();
      }),
    ).to.match(/ACCESS_REFUSED/);
    expect(
      await refusal(flood, async (ch) => {
        ch.publish('', replyTo['steady-service'] as string, junk, { userId: floodUser });
        await ch.waitForConfirms();
      }),
    ).to.match(/ACCESS_REFUSED/);
    expect(
      await refusal(flood, async (ch) => {
        ch.publish(`${prefix}.replies.steady-service`, replyTo['steady-service'] as string, junk, {
          userId: floodUser,
        });
        await ch.waitForConfirms();
      }),
    ).to.match(/ACCESS_REFUSED/);

    // Its own reply key is allowed: it floods it for 8 s as fast as the broker takes it, while steady is probed.
    const heap = async (): Promise<number> => {
      const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      return Number(/^nodejs_heap_size_used_bytes (\d+)/m.exec(text)?.[1] ?? 0);
    };
    const pid = gw!.child.pid as number;
    const rssBefore = rssOf(pid);
    let maxHeap = 0;
    let maxRss = rssBefore;
    const sampler = setInterval(() => {
      maxRss = Math.max(maxRss, rssOf(pid));
      void heap().then(
        (h) => (maxHeap = Math.max(maxHeap, h)),
        () => undefined,
      );
    }, 250);
    const probes = probeLoop(
      async () => (await admin('GET', steadyRoute, { headers: { connection: 'close' } })).status,
      50,
    );
    let sent = 0;
    const started = Date.now();
    let stats: Awaited<ReturnType<typeof probes.stop>>;
    try {
      const conn = await amqp.connect(flood);
      try {
        const ch = await conn.createConfirmChannel();
        while (Date.now() - started < 8000) {
          for (let i = 0; i < 500; i += 1)
            ch.publish(`${prefix}.replies.flood-service`, replyTo['flood-service'] as string, junk, {
              userId: floodUser,
              correlationId: randomUUID(),
            });
          sent += 500;
          await ch.waitForConfirms();
        }
      } finally {
        await conn.close().catch(() => undefined);
      }
      await new Promise((r) => setTimeout(r, 2000));
    } finally {
      stats = await probes.stop();
      clearInterval(sampler);
    }
    const seconds = (Date.now() - started) / 1000 - 2;

    process.stdout.write(
      `      (${sent} junk replies in ${seconds.toFixed(1)} s; steady probes ${JSON.stringify(stats)}; heap at most ${(maxHeap / 1048576).toFixed(1)} MB; RSS +${((maxRss - rssBefore) / 1048576).toFixed(1)} MB)\n`,
    );
    expect(gw!.child.exitCode, gw!.output().slice(-2000)).to.equal(null);
    expect(stats.failures, JSON.stringify(stats)).to.equal(0);
    expect(stats.count, JSON.stringify(stats)).to.be.greaterThan(20);
    // Within the 3 s the docs promise under a flood (the probes share this process with the flooder: medians tell more).
    expect(stats.maxMs, JSON.stringify(stats)).to.be.below(3000);
    expect(stats.medianMs, JSON.stringify(stats)).to.be.below(500);
    expect(maxRss - rssBefore, `RSS grew by ${maxRss - rssBefore} bytes`).to.be.below(64 * 1024 * 1024);
    // The junk was dropped and said so in a line or two, not one per message.
    const lines = gw!
      .output()
      .split('\n')
      .filter((l) => l.includes('dropped a reply on the reply queue of flood-service'));
    expect(lines.length).to.be.within(1, 2);
    // The flooded queue is the bounded one of flood-service; the flood's own route still answers once it is drained.
    const stdout = await queueArguments();
    const row = stdout.split('\n').find((l) => l.startsWith(replyTo['flood-service'] as string));
    expect(row, stdout.slice(0, 2000)).to.match(/x-max-length-bytes/);
    await eventually(async () => expect((await admin('GET', floodRoute)).status).to.equal(200), 30_000);
  });
});
