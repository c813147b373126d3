import { expect } from 'chai';
import { startGateway, eventually, type GatewayProcess } from '../support/gateway-process';
import * as amqp from 'amqplib';
import { AMQP_URL, freePort, IMAGE_NODE_OPTIONS, uniquePrefix } from '../support/env';
import { httpAs } from '../support/http';
import { roguePublisher, rogueContract, type RoguePublisher } from '../support/rogue';
import { probeLoop } from '../support/flood';
import { createBrokerUsers, type BrokerUsers } from '../support/broker-users';
import { AmqpTransport } from '../../plugin/bus/amqp';
import { serve, type RunningService } from '../../sdk';

const admin = httpAs(['admin:all', 'users:read']);

function wideSchema(properties: number): Record<string, unknown> {
  const props: Record<string, unknown> = {};
  for (let i = 0; i < properties; i += 1) props[`property${i}`] = { type: 'string', maxLength: 64 };
  return { type: 'object', properties: props };
}

/** `{"a":{"a":…}}` nested `depth` times, as raw text (no recursion to build it). */
function deepText(depth: number): string {
  return `${'{"a":'.repeat(depth)}{}${'}'.repeat(depth)}`;
}

/**
 * The image runs the gateway with its heap capped at 128 MB. No announcement, of any size or shape, may crash it or
 * stall it: a 1 MB schema with 13,400 properties used to end it with a fatal out-of-memory error.
 */
describe('announcements against a gateway with a 128 MB heap', function () {
  this.timeout(90_000);
  let gw: GatewayProcess;
  let rogue: RoguePublisher;

  before(async () => {
    gw = await startGateway({ BUS_URL: AMQP_URL, NODE_OPTIONS: IMAGE_NODE_OPTIONS });
    rogue = await roguePublisher(AMQP_URL, gw.prefix);
  });
  after(async () => {
    await rogue?.close();
    await gw?.stop();
  });

  /** The gateway is alive and answers, its users route included, each probe within a bound that a stall would pass. */
  async function stillServing(): Promise<void> {
    expect(gw.child.exitCode, gw.output().slice(-2000)).to.equal(null);
    for (let i = 0; i < 5; i += 1) {
      const res = await admin('GET', `${gw.baseUrl}/api/users`, { headers: { connection: 'close' } });
      expect(res.status).to.equal(200);
    }
  }

  it('survives 1 MB and 5 MB schemas (13,400 and 67,000 properties), dropped before parsing', async () => {
    for (const [name, properties] of [
      ['one-mb', 13_400],
      ['five-mb', 67_000],
    ] as const) {
      const service = `${name}-service`;
      const body = {
        service,
        instanceId: `${service}-1`,
        ttlMs: 60_000,
        contracts: [rogueContract('HugeCommand', service, { inputSchema: wideSchema(properties) })],
      };
      for (let i = 0; i < 5; i += 1) await rogue.publish(`announce.${service}`, body);
    }
    await eventually(
      async () => expect(gw.output()).to.match(/routing key announce\.five-mb-service\): \d+ bytes, over 262144/),
      20_000,
    );
    await stillServing();
  });

  it('survives schemas under the byte limit that are too wide or too deep, and many contracts', async () => {
    const wide = {
      service: 'wide-service',
      instanceId: 'w1',
      ttlMs: 60_000,
      contracts: [rogueContract('WideCommand', 'wide-service', { inputSchema: wideSchema(5_000) })],
    };
    await rogue.publish('announce.wide-service', wide);
    const deep = `{"service":"deep-service","instanceId":"d1","ttlMs":60000,"contracts":[{"messageType":"DeepCommand","targetService":"deep-service","requiredPermissions":[],"outputSchema":{},"inputSchema":${deepText(40_000)}}]}`;
    expect(deep.length).to.be.below(256 * 1024);
    await rogue.publish('announce.deep-service', Buffer.from(deep));
    const many = {
      service: 'many-service',
      instanceId: 'm1',
      ttlMs: 60_000,
      contracts: Array.from({ length: 1_000 }, (_, i) => rogueContract(`Many${i}Command`, 'many-service')),
    };
    await rogue.publish('announce.many-service', many);
    await eventually(async () => {
      const out = gw.output();
      expect(out).to.include(
        'refused announcement from service wide-service instance w1: contracts[0] inputSchema has more than 4000 members (schemaMaxProperties)',
      );
      expect(out).to.include(
        'refused announcement from service deep-service instance d1: contracts[0] inputSchema nests deeper than 32 levels (schemaMaxDepth)',
      );
      expect(out).to.include(
        'refused announcement from service many-service instance m1: more than 200 contracts (announcementMaxContracts)',
      );
    }, 20_000);
    await stillServing();
  });

  it('survives a burst of distinct services and instances up to the limits', async () => {
    for (let i = 0; i < 300; i += 1) {
      const service = `burst${i}-service`;
      await rogue.publish(`announce.${service}`, {
        service,
        instanceId: `${service}-1`,
        ttlMs: 60_000,
        contracts: [rogueContract(`Burst${i}Command`, service)],
      });
    }
    await eventually(async () => expect(gw.output()).to.include('(announcedServicesMax)'), 20_000);
    await stillServing();
  });
});

/** An announcement just under the size limit: 200 contracts whose schemas all differ from every earlier one. */
function bigAnnouncement(service: string, n: number): Record<string, unknown> {
  const contracts = Array.from({ length: 200 }, (_, c) => {
    const properties: Record<string, unknown> = {};
    for (let p = 0; p < 12; p += 1)
      properties[`field${p}_${n}`] = { type: 'string', maxLength: 64, description: 'x'.repeat(20) };
    return {
      messageType: `Flood${c}Command`,
      targetService: service,
      requiredPermissions: [],
      inputSchema: { type: 'object', properties },
      outputSchema: { type: 'object' },
    };
  });
  return { service, instanceId: `${service}-${n}`, ttlMs: 60_000, contracts };
}

/**
 * One service's broker user (made from a services file, as documented) floods a 128 MB-heap gateway with new
 * instance ids, each announcement within every size limit: the retained-bytes budget refuses what is over it, and
 * another service's route answers within 3 s throughout.
 */
describe('a per-service broker user announcing new instance ids against a 128 MB heap', function () {
  this.timeout(180_000);
  const prefix = uniquePrefix('heapuser');
  let users: BrokerUsers | undefined;
  let gw: GatewayProcess | undefined;
  let transport: AmqpTransport | undefined;
  let steady: RunningService | undefined;
  let metricsPort = 0;

  before(async () => {
    users = await createBrokerUsers(prefix, { 'flood-service': ['Flood*'], 'steady-service': ['ListSteadyQuery'] });
    metricsPort = await freePort();
    gw = await startGateway({
      ...users.gatewayEnv(),
      METRICS_PORT: String(metricsPort),
      NODE_OPTIONS: IMAGE_NODE_OPTIONS,
    });
    transport = new AmqpTransport(users.url('steady-service'), { prefix });
    await transport.start();
    steady = await serve({
      transport,
      service: 'steady-service',
      acceptRequestsFrom: users.user('gateway'),
      operations: [
        {
          contract: {
            messageType: 'ListSteadyQuery',
            inputSchema: { type: 'object' },
            outputSchema: { type: 'array' },
            requiredPermissions: [],
          },
          handle: () => ['steady'],
        },
      ],
    });
  });

  after(async () => {
    await steady?.stop().catch(() => undefined);
    await transport?.close().catch(() => undefined);
    await gw?.stop().catch(() => undefined);
    await users?.remove();
  });

  it('refuses what is over the user’s budget, survives, and answers an existing route within 3 s throughout', async () => {
    const route = `${gw!.baseUrl}/api/steadies`;
    await eventually(async () => expect((await admin('GET', route)).body).to.deep.equal(['steady']), 15_000);
    const heap = async (): Promise<number> => {
      const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      return Number(/^nodejs_heap_size_used_bytes (\d+)/m.exec(text)?.[1] ?? 0);
    };
    // Built before the clock starts: the steady service and the probes share this process with the flooder.
    const bodies = Array.from({ length: 120 }, (_, n) =>
      Buffer.from(JSON.stringify(bigAnnouncement('flood-service', n))),
    );
    let maxHeap = 0;
    const sampler = setInterval(
      () =>
        void heap().then(
          (h) => (maxHeap = Math.max(maxHeap, h)),
          () => undefined,
        ),
      500,
    );
    const probes = probeLoop(async () => (await admin('GET', route, { headers: { connection: 'close' } })).status, 100);
    const floodUser = users!.user('flood-service');
    const conn = await amqp.connect(users!.url('flood-service'));
    let sent = 0;
    try {
      const ch = await conn.createConfirmChannel();
      // 120 announcements of ~240 KB (29 MB): more than three times the 35 that ended a gateway before.
      for (const body of bodies) {
        ch.publish(`${prefix}.announcements.flood-service`, 'announce.flood-service', body, { userId: floodUser });
        sent += 1;
        if (sent % 5 === 0) await ch.waitForConfirms();
      }
      await ch.waitForConfirms();
    } finally {
      await conn.close().catch(() => undefined);
    }
    // The gateway takes 4 MB/s off the bus: keep probing while it works through what the broker holds.
    await new Promise((r) => setTimeout(r, 10_000));
    const stats = await probes.stop();
    clearInterval(sampler);
    expect(gw!.child.exitCode, gw!.output().slice(-2000)).to.equal(null);
    expect(sent).to.equal(120);
    expect(stats.failures, JSON.stringify(stats)).to.equal(0);
    expect(stats.maxMs, JSON.stringify(stats)).to.be.below(3000);
    expect(gw!.output()).to.match(new RegExp(`broker user ${floodUser} (would retain|has) \\d+ bytes`));
    expect(gw!.output()).to.not.match(/heap out of memory/i);
    process.stdout.write(
      `      (gateway heap at most ${(maxHeap / 1048576).toFixed(1)} MB; probes ${JSON.stringify(stats)})\n`,
    );
  });
});

/**
 * The quick start over RabbitMQ: every service and the gateway share `guest`, so no budget per broker user tells the
 * flooder apart. 2,000 announcements of ~240 KB (480 MB) under new service names and instance ids, as fast as the
 * broker confirms them: the gateway must stay under its 128 MB heap, answer /health within 2 s and serve its real
 * routes throughout (the budget per service name and the total hold whatever the broker user).
 */
describe('one shared credential (guest) announcing 2,000 × 240 KB under new names against a 128 MB heap', function () {
  this.timeout(300_000);
  let gw: GatewayProcess | undefined;
  let metricsPort = 0;

  before(async () => {
    metricsPort = await freePort();
    gw = await startGateway({
      BUS_URL: AMQP_URL,
      METRICS_PORT: String(metricsPort),
      NODE_OPTIONS: IMAGE_NODE_OPTIONS,
    });
  });
  after(async () => gw?.stop().catch(() => undefined));

  it('stays alive under its heap, answers /health within 2 s and serves GET /api/users throughout', async () => {
    const base = gw!.baseUrl;
    await eventually(async () => expect((await admin('GET', `${base}/api/users`)).status).to.equal(200), 15_000);
    // One template, its field names made distinct per announcement by one replace: the pool cannot share a schema.
    const template = JSON.stringify(bigAnnouncement('@S@', 0)).replaceAll('_0"', '_@N@"');
    const body = (n: number): Buffer => {
      const service = `flood${n}-service`;
      return Buffer.from(
        template.replaceAll('@S@', service).replaceAll('@N@', String(n)).replace(`${service}-0`, `${service}-${n}`),
      );
    };
    expect(body(7).length).to.be.within(200_000, 260_000);
    expect(body(7).toString()).to.include('field3_7"').and.include('"flood7-service-7"');
    const heap = async (): Promise<number> => {
      const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      return Number(/^nodejs_heap_size_used_bytes (\d+)/m.exec(text)?.[1] ?? 0);
    };
    let maxHeap = 0;
    const sampler = setInterval(
      () =>
        void heap().then(
          (h) => (maxHeap = Math.max(maxHeap, h)),
          () => undefined,
        ),
      500,
    );
    const health = probeLoop(
      async () => (await fetch(`${base}/health`, { headers: { connection: 'close' } })).status,
      100,
    );
    const users = probeLoop(
      async () => (await admin('GET', `${base}/api/users`, { headers: { connection: 'close' } })).status,
      100,
    );
    const conn = await amqp.connect(AMQP_URL);
    let sent = 0;
    try {
      const ch = await conn.createConfirmChannel();
      for (let n = 1; n <= 2_000; n += 1) {
        ch.publish(`${gw!.prefix}.discovery`, `announce.flood${n}-service`, body(n), {
          contentType: 'application/json',
        });
        sent += 1;
        if (sent % 20 === 0) await ch.waitForConfirms();
      }
      await ch.waitForConfirms();
    } finally {
      await conn.close().catch(() => undefined);
    }
    // Keep probing while the gateway works through what the broker still holds for it.
    await new Promise((r) => setTimeout(r, 10_000));
    const [healthStats, usersStats] = [await health.stop(), await users.stop()];
    clearInterval(sampler);
    expect(gw!.child.exitCode, gw!.output().slice(-2000)).to.equal(null);
    expect(sent).to.equal(2_000);
    expect(gw!.output()).to.not.match(/heap out of memory|Ineffective mark-compacts/i);
    expect(healthStats.failures, JSON.stringify(healthStats)).to.equal(0);
    expect(healthStats.maxMs, JSON.stringify(healthStats)).to.be.below(2_000);
    expect(usersStats.failures, JSON.stringify(usersStats)).to.equal(0);
    expect(maxHeap, 'heap sampled')
      .to.be.above(0)
      .and.below(128 * 1024 * 1024);
    process.stdout.write(
      `      (gateway heap at most ${(maxHeap / 1048576).toFixed(1)} MB; /health ${JSON.stringify(healthStats)}; /api/users ${JSON.stringify(usersStats)})\n`,
    );
  });
});
