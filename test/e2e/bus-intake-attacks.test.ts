import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { AmqpTransport } from '../../plugin/bus/amqp';
import { silentLogger } from '../../plugin/logger';
import { serve, type RunningService } from '../../sdk';
import * as amqp from 'amqplib';
import { createBrokerUsers, type BrokerUsers } from '../support/broker-users';
import { startReferenceServices, type ReferenceServices } from '../support/reference-services';
import { startGateway, eventually, type GatewayProcess } from '../support/gateway-process';
import { startServiceProcess, type ServiceProcess } from '../support/service-process';
import { deepHeaderClient, type DeepHeaderClient } from '../support/deep-headers';
import { rogueContract } from '../support/rogue';
import { probeLoop } from '../support/flood';
import { AMQP_URL, uniquePrefix } from '../support/env';
import { http, httpAs } from '../support/http';

/*
 * The strict set-up (a broker user per service from the generated definitions, REQUIRE_ANNOUNCEMENT_USER) attacked
 * with rogue-service's credential alone, against the real broker: header tables nested 9,000 deep (announcement,
 * request, reply) close no connection, and a flood on the rogue's own announcement key delays neither the other
 * services' announcements nor logins, nor grows the gateway's memory.
 */

const admin = httpAs(['admin:all', 'users:read', 'users:create']);
const ADMIN = { email: 'intake@example.com', password: 'intake-password-1' };
const SERVICES = ['users-service', 'auth-service', 'rogue-service', 'late-service', 'nap-service'];
const DEEP = 9_000;

/** The resident set of process `pid`, in MB (Linux). */
function rssMb(pid: number): number {
  const line = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return line ? Number(line[1]) / 1024 : 0;
}

/**
 * Publishes `size`-byte junk on `announce.<service>` at `bytesPerSecond` for `durationMs` as `url`'s user (no
 * confirms: as fast as a publisher can, paced in 25 ms slices); resolves to the messages sent.
 */
async function floodJunk(
  url: string,
  prefix: string,
  user: string,
  service: string,
  size: number,
  bytesPerSecond: number,
  durationMs: number,
): Promise<number> {
  const conn = await amqp.connect(url, { noDelay: true });
  const junk = Buffer.alloc(size, 'x');
  let sent = 0;
  try {
    const ch = await conn.createChannel();
    const start = performance.now();
    while (performance.now() - start < durationMs) {
      const due = Math.floor(((performance.now() - start) * bytesPerSecond) / 1000 / size);
      while (sent < due) {
        if (!ch.publish(`${prefix}.announcements.${service}`, `announce.${service}`, junk, { userId: user }))
          await new Promise((r) => ch.once('drain', r));
        sent += 1;
      }
      await new Promise((r) => setTimeout(r, 25));
    }
    return sent;
  } finally {
    await conn.close().catch(() => undefined);
  }
}

describe('intake attacks with one service credential (per-service broker users, real RabbitMQ)', function () {
  this.timeout(180_000);
  const prefix = uniquePrefix('intake');
  let users: BrokerUsers | undefined;
  let gw: GatewayProcess | undefined;
  let nap: ServiceProcess | undefined;
  let refs: ReferenceServices | undefined;
  let deep: DeepHeaderClient | undefined;
  const transports: AmqpTransport[] = [];
  const running: RunningService[] = [];

  before(async () => {
    users = await createBrokerUsers(prefix, SERVICES);
    // The probes log in every 50 ms from one address: the per-address limit on public routes is not what is tested.
    gw = await startGateway({ ...users.gatewayEnv(), PUBLIC_RATE_LIMIT_MAX: 'off' });
    nap = await startServiceProcess('nap-service', {
      BUS_URL: users.url('nap-service'),
      BUS_PREFIX: prefix,
      BUS_GATEWAY_USER: users.user('gateway'),
    });
    refs = await startReferenceServices(users, prefix, gw.baseUrl, { label: 'intake', admin: ADMIN, bcryptRounds: 4 });
    deep = await deepHeaderClient(users.url('rogue-service'));
  });

  after(async () => {
    await deep?.close().catch(() => undefined);
    for (const s of running) await s.stop().catch(() => undefined);
    for (const t of transports) await t.close().catch(() => undefined);
    await refs?.stop();
    await nap?.stop().catch(() => undefined);
    await gw?.stop().catch(() => undefined);
    await users?.remove();
  });

  const login = () => http('POST', `${gw!.baseUrl}/api/login`, { body: ADMIN });

  /** One login and one GET /api/users: 200 only if both are. */
  async function loginAndList(): Promise<number> {
    const [a, b] = await Promise.all([login(), admin('GET', `${gw!.baseUrl}/api/users`)]);
    return a.status === 200 && b.status === 200 ? 200 : a.status === 200 ? b.status : a.status;
  }

  /** Publishes `body` on announce.rogue-service as rogue-service's broker user, with ordinary headers. */
  async function announceAsRogue(body: Record<string, unknown>): Promise<void> {
    const conn = await amqp.connect(users!.url('rogue-service'));
    try {
      const ch = await conn.createConfirmChannel();
      ch.publish(`${prefix}.announcements.rogue-service`, 'announce.rogue-service', Buffer.from(JSON.stringify(body)), {
        userId: users!.user('rogue-service'),
        contentType: 'application/json',
      });
      await ch.waitForConfirms();
    } finally {
      await conn.close().catch(() => undefined);
    }
  }

  function connectionsUp(): void {
    expect(gw!.child.exitCode, gw!.output().slice(-2000)).to.equal(null);
    expect(nap!.child.exitCode, nap!.output().slice(-2000)).to.equal(null);
    expect(gw!.output()).to.not.match(/connection lost|connection error|Maximum call stack/);
    expect(nap!.output()).to.not.match(/connection lost|connection error|Maximum call stack/);
  }

  it(`drops an announcement, a request and a reply whose headers nest ${DEEP} deep; every connection stays up`, async () => {
    const rogueUser = users!.user('rogue-service');
    const announcement = {
      service: 'rogue-service',
      instanceId: 'rogue-deep',
      ttlMs: 60_000,
      contracts: [rogueContract('DeepHeadersCommand', 'rogue-service')],
    };
    await deep!.publish(
      `${prefix}.announcements.rogue-service`,
      'announce.rogue-service',
      JSON.stringify(announcement),
      DEEP,
      {
        userId: rogueUser,
        contentType: 'application/json',
      },
    );
    await eventually(
      async () =>
        expect(gw!.output()).to.include(
          `dropped an announcement (routing key announce.rogue-service, broker user ${rogueUser}): headers nested too deep or undecodable`,
        ),
      10_000,
    );
    // Straight into another service's work queue through the default exchange: a service user may not (the broker
    // refuses it), a shared credential may; nap-service (the SDK, its own process) decodes it and refuses it.
    const shared = await deepHeaderClient(AMQP_URL);
    try {
      await shared.publish('', `${prefix}.svc.nap-service`, '{"input":{"ms":0}}', DEEP, {
        correlationId: 'deep-request',
        userId: 'guest',
      });
    } finally {
      await shared.close();
    }
    await eventually(
      async () => expect(nap!.output()).to.match(/dropped a request to nap-service published by broker user guest/),
      10_000,
    );
    // The rogue's own service answers every request with such headers.
    await deep!.answerDeep(
      `${prefix}.svc.rogue-service`,
      `${prefix}.requests`,
      'rogue-service',
      `${prefix}.replies.rogue-service`,
      DEEP,
      JSON.stringify({ ok: true, result: {} }),
    );
    await announceAsRogue({
      service: 'rogue-service',
      instanceId: 'rogue-echo',
      ttlMs: 60_000,
      contracts: [rogueContract('EchoCommand', 'rogue-service')],
    });
    await eventually(async () => {
      const res = await admin('POST', `${gw!.baseUrl}/api/echo`, { body: {} });
      expect(res.status, res.text).to.equal(502);
      expect(res.body).to.include({ code: 'SERVICE_UNAVAILABLE', service: 'rogue-service' });
    }, 15_000);
    expect(gw!.output()).to.include(
      "a reply from service 'rogue-service' has headers nested too deep or undecodable; answered 502",
    );
    const napCreated = await http('POST', `${gw!.baseUrl}/api/naps`, { body: { ms: 0 } });
    expect(napCreated.status, napCreated.text).to.equal(201);
    expect(await loginAndList()).to.equal(200);
    const listing = await admin('GET', `${gw!.baseUrl}/api/discovery/contracts`);
    expect((listing.body.contracts as Array<{ messageType: string }>).map((c) => c.messageType)).to.not.include(
      'DeepHeadersCommand',
    );
    connectionsUp();
  });

  it('answers at once under input made for an exponential pattern, and refuses a pattern the linear engine cannot run', async () => {
    const evil = {
      type: 'object',
      properties: { s: { type: 'string', pattern: '^(a+)+$' } },
      required: ['s'],
      patternProperties: { '^(b+)+$': { type: 'integer' } },
    };
    await announceAsRogue({
      service: 'rogue-service',
      instanceId: 'rogue-echo',
      ttlMs: 60_000,
      contracts: [
        rogueContract('EchoCommand', 'rogue-service'),
        rogueContract('MatchPatternCommand', 'rogue-service', { inputSchema: evil }),
      ],
    });
    await eventually(async () => {
      const res = await admin('POST', `${gw!.baseUrl}/api/match-pattern`, { body: { s: 'ok' } });
      expect(res.status, res.text).to.equal(400);
    }, 15_000);
    for (const body of [
      { s: `${'a'.repeat(29)}!` },
      { s: `${'a'.repeat(200_000)}!` },
      { s: 'x', [`${'b'.repeat(29)}!`]: 'every key is matched against ^(b+)+$ (allErrors)' },
    ]) {
      const t0 = performance.now();
      const res = await admin('POST', `${gw!.baseUrl}/api/match-pattern`, { body });
      const ms = performance.now() - t0;
      expect(res.status, res.text).to.equal(400);
      expect(res.body.code).to.equal('VALIDATION_ERROR');
      expect(ms, `answered in ${ms.toFixed(0)} ms`).to.be.below(2_000);
    }
    await announceAsRogue({
      service: 'rogue-service',
      instanceId: 'rogue-lookahead',
      ttlMs: 60_000,
      contracts: [
        rogueContract('LookAheadCommand', 'rogue-service', {
          inputSchema: { type: 'object', properties: { p: { type: 'string', pattern: '^(?=.*[0-9]).+$' } } },
        }),
      ],
    });
    await eventually(
      async () =>
        expect(gw!.output()).to.match(
          /refused announcement from service rogue-service instance rogue-lookahead: contracts\[0\] inputSchema pattern "\^\(\?=\.\*\[0-9\]\)\.\+\$" cannot run on the linear-time engine/,
        ),
      10_000,
    );
    expect(await loginAndList()).to.equal(200);
  });

  it("under 20 s of 1 MB junk at 40 MB/s on the rogue's key, logins and GET /api/users answer 200 and another service's announcement is served within 3 s", async () => {
    const probes = probeLoop(loginAndList, 50);
    const flood = floodJunk(
      users!.url('rogue-service'),
      prefix,
      users!.user('rogue-service'),
      'rogue-service',
      1024 * 1024,
      40 * 1024 * 1024,
      20_000,
    );
    let late: { transport: AmqpTransport; service: RunningService } | undefined;
    try {
      await new Promise((r) => setTimeout(r, 5_000));
      const transport = new AmqpTransport(users!.url('late-service'), { prefix, logger: silentLogger });
      transports.push(transport);
      await transport.start();
      const announcedAt = Date.now();
      const service = await serve({
        transport,
        service: 'late-service',
        operations: [
          {
            contract: {
              messageType: 'LateArrivalCommand',
              public: true,
              inputSchema: { type: 'object' },
              outputSchema: { type: 'object' },
              requiredPermissions: [],
            },
            handle: async () => ({ late: true }),
          },
        ],
      });
      late = { transport, service };
      running.push(service);
      await eventually(
        async () => {
          const res = await http('POST', `${gw!.baseUrl}/api/late-arrival`, { body: {} });
          expect(res.status, res.text).to.equal(200);
        },
        10_000,
        50,
      );
      const servedAfter = Date.now() - announcedAt;
      expect(servedAfter, `late-service served after ${servedAfter} ms`).to.be.below(3_000);
    } finally {
      const sent = await flood;
      const stats = await probes.stop();
      expect(sent).to.be.above(600);
      expect(stats.count).to.be.above(20);
      expect(stats.failures, JSON.stringify(stats)).to.equal(0);
    }
    expect(late).to.not.equal(undefined);
    expect(gw!.output()).to.match(
      /dropped an announcement \(routing key announce\.rogue-service, broker user [^)]+\): 1048576 bytes, over 262144/,
    );
    connectionsUp();
  });

  it("under 15 s of 8 MB messages on the rogue's key, the gateway's resident memory grows by under 64 MB and it keeps answering", async () => {
    const pid = gw!.child.pid!;
    const before = rssMb(pid);
    let maxRss = before;
    const sampler = setInterval(() => (maxRss = Math.max(maxRss, rssMb(pid))), 200);
    const probes = probeLoop(loginAndList, 50);
    try {
      const sent = await floodJunk(
        users!.url('rogue-service'),
        prefix,
        users!.user('rogue-service'),
        'rogue-service',
        8 * 1024 * 1024,
        40 * 1024 * 1024,
        15_000,
      );
      expect(sent, '8 MB messages sent').to.be.above(20); // 75 at the full rate; a loaded machine publishes fewer
    } finally {
      clearInterval(sampler);
      const stats = await probes.stop();
      expect(stats.failures, JSON.stringify(stats)).to.equal(0);
    }
    // Growth is what the flood costs (an 8 MB message taken in would add 8 MB; before the intake guards RSS passed
    // 500 MB); the start depends on what the earlier floods of this file left in a 128 MB heap.
    const peak = `gateway RSS ${before.toFixed(0)} MB before, peaked at ${maxRss.toFixed(0)} MB`;
    expect(maxRss - before, peak).to.be.below(64);
    expect(maxRss, peak).to.be.below(256);
    connectionsUp();
  });
});
