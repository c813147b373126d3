import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { eventually, startGateway, type GatewayProcess } from '../support/gateway-process';
import { httpAs, type HttpResult } from '../support/http';
import { createTestDatabase, type TestDatabase } from '../support/databases';
import { startScriptProcess, type ServiceProcess } from '../support/service-process';
import { freePort, uniquePrefix } from '../support/env';
import { labelValues, scrape } from '../observability/support';
import { TEST_JWT_SECRET } from '../support/tokens';
import { RabbitCluster, rabbitmqBin, type ClusterNode } from '../support/rabbitmq-cluster';

type HttpFn = ReturnType<typeof httpAs>;

const CREATES = 60;
/** Creates in flight at once, each a client that retries 5xx (and 409 "still being processed") with its key. */
const CLIENTS = 6;
/** The node is killed once this many creates have been answered: the rest run through and after the loss. */
const KILL_AFTER = 12;
/** How long /health may stay 503 after the kill. */
const HEALTH_BACK_MS = 20_000;
/** The freeze case (issue: the busiest node SIGSTOPped after 100 of 300 keyed creates, resumed 45 s later). */
const FREEZE_CREATES = 300;
const FREEZE_AFTER = 100;
const FROZEN_MS = 45_000;
/** How soon after the freeze reads through the gateway must answer 200 again. */
const READS_BACK_MS = 20_000;

/**
 * A RabbitMQ cluster of three nodes of this test's own (test/support/rabbitmq-cluster.ts), quorum work queues, one
 * gateway and two reference-services processes on PostgreSQL, all given the three addresses in BUS_URL. The node
 * most of them are connected to is killed with kill -9 under keyed creates; every key must end with exactly one
 * user, no known route may answer 404, no process may exit, /health must be back to 200 within 20 s, and the
 * node must rejoin once restarted. Then the busiest node is frozen (SIGSTOP) for 45 s under keyed creates: the same,
 * reads answer 200 again within 20 s of the freeze, and the node rejoins once resumed.
 */
describe('a RabbitMQ cluster loses a node under keyed creates: nothing lost, nothing run twice', function () {
  this.timeout(300_000);
  const prefix = uniquePrefix('cluster');
  let cluster: RabbitCluster | undefined;
  let db: TestDatabase | undefined;
  let gateway: GatewayProcess | undefined;
  let metricsUrl = '';
  /** The probes of a test: after() ends them should the test fail midway. */
  const probeStops: Array<() => Promise<void>> = [];
  const services: ServiceProcess[] = [];

  before(async function () {
    const bin = rabbitmqBin();
    if (!bin) {
      console.log(
        '      skipped: rabbitmq-server is not installed (Debian package rabbitmq-server), so no cluster can be started',
      );
      this.skip();
    }
    cluster = await RabbitCluster.start(bin!);
    db = await createTestDatabase('cluster');
    const busUrl = cluster.busUrl();
    const serviceEnv = {
      BUS_URL: busUrl,
      BUS_PREFIX: prefix,
      BUS_QUEUE_TYPE: 'quorum',
      DATABASE_URL: db.url,
      JWT_SECRET: TEST_JWT_SECRET,
      ADMIN_PASSWORD: 'cluster-admin',
    };
    // Both settle before a failure goes up, so after() stops whichever did start.
    const started = await Promise.allSettled(
      [0, 1].map(() => startScriptProcess('scripts/reference-services', serviceEnv, 60_000)),
    );
    for (const s of started) if (s.status === 'fulfilled') services.push(s.value);
    const failed = started.find((s) => s.status === 'rejected');
    if (failed) throw failed.reason;
    const metricsPort = await freePort();
    metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    gateway = await startGateway(
      {
        BUS_URL: busUrl,
        BUS_PREFIX: prefix,
        START_REFERENCE_SERVICES: 'false',
        REQUEST_TIMEOUT_MS: '15000',
        METRICS_PORT: String(metricsPort),
        METRICS_HOST: '127.0.0.1',
      },
      { readyTimeoutMs: 60_000 },
    );
    const gw = gateway;
    await eventually(
      async () => {
        const res = await httpAs(['admin:all'], 'cluster-warm-up')('GET', `${gw.baseUrl}/api/users?pageSize=1`);
        if (res.status !== 200) throw new Error(`routes not ready: ${res.status}`);
      },
      60_000,
      200,
    );
  });

  after(async () => {
    for (const stop of probeStops) await stop();
    for (const s of services) await s.stop();
    // The cluster is still up here, so the gateway's stop can delete this run's exchanges on it.
    await gateway?.stop().catch(() => undefined);
    await cluster?.stop();
    await db?.drop();
  });

  it(`${CREATES} keyed creates, the busiest node killed (kill -9) midway: each key one user, no 404, /health back within 20 s, the node rejoins`, async () => {
    const c = cluster!;
    const gw = gateway!;
    const admin = httpAs(['admin:all'], 'cluster-creates');
    const victim = await nodeToKill(c, gw);
    const nodes = c.nodes.map((n) => `127.0.0.1:${n.amqpPort}`);
    // The metric names the node /health names, one series.
    const gatewayNode = async (): Promise<string> =>
      (await admin('GET', `${gw.baseUrl}/health`)).body?.bus?.node as string;
    const metricNodes = async (): Promise<string[]> => [
      ...labelValues(await scrape(metricsUrl), 'contracts_gateway_bus_connection_node', 'node'),
    ];
    expect(await metricNodes()).to.deep.equal([await gatewayNode()]);

    // Probes: a known route and /health, every 100 ms, from before the kill to after the last create.
    const probing = startProbes(gw.baseUrl, admin);
    probeStops.push(probing.stop);
    const { probes } = probing;

    const run = keyedCreates(gw.baseUrl, admin, 'cluster', CREATES);
    const { emails, keys, attempts, tookMs, answered } = run;
    let killedAt = 0;
    const killed = (async () => {
      await eventually(
        async () => {
          if (run.done() < KILL_AFTER) throw new Error(`${run.done()} answered`);
        },
        120_000,
        20,
      );
      killedAt = Date.now();
      await c.kill(victim);
    })();
    await run.finished;
    await killed;
    // /health back: the first 200 after the last non-200 since the kill.
    await eventually(
      async () => {
        if (probes[probes.length - 1]!.health !== 200) throw new Error('health not 200 yet');
      },
      HEALTH_BACK_MS,
      100,
    );
    await probing.stop();

    await expectOneUserPerKey(db!.url, emails, answered, [201]);
    const afterKill = probes.filter((p) => p.at >= killedAt);
    expect(
      afterKill.filter((p) => p.route === 404),
      'a known route never answers 404',
    ).to.deep.equal([]);
    const lastDown = [...afterKill].reverse().find((p) => p.health !== 200);
    const healthBackMs = lastDown ? lastDown.at - killedAt : 0;
    expect(healthBackMs).to.be.below(HEALTH_BACK_MS);
    for (const p of [gw.child, ...services.map((s) => s.child)])
      expect(p.exitCode, 'no gateway or service process exits').to.equal(null);
    const now = await gatewayNode();
    expect(nodes, 'on a node of the list').to.include(now);
    expect(now, 'not on the node that was killed').not.to.equal(`127.0.0.1:${victim.amqpPort}`);
    expect(await metricNodes()).to.deep.equal([now]);

    // What the outside saw, for docs/operations.md ("Running more than one").
    const retried = attempts.map((n, i) => (n > 1 ? i : -1)).filter((i) => i >= 0);
    const unavailable = afterKill.filter((p) => p.route >= 500).length;
    const longest = Math.max(...retried.map((i) => tookMs[i]!), 0);
    console.log(
      `      node loss: /health not 200 for ${healthBackMs} ms; ${retried.length} of ${CREATES} creates retried (at most ${Math.max(...attempts)} attempts, ` +
        `the longest answered ${longest} ms after it was first sent); ${unavailable} of ${afterKill.length} route probes after the kill were 5xx`,
    );

    // The node comes back on its own data and rejoins the cluster; the survivors see it running.
    await c.restart(victim);
    const witness = c.nodes.find((n) => n !== victim)!;
    await c.awaitRunning(c.nodes, 90_000);
    expect(await c.runningNodes(witness)).to.include(victim.name);
    const again = await admin('POST', `${gw.baseUrl}/api/users`, {
      body: { email: emails[0], password: 'long-enough-1' },
      headers: { 'idempotency-key': keys[0]! },
    });
    expect(again.status).to.equal(201);
    expect(again.headers.get('idempotent-replayed')).to.equal('true');
  });

  it(`${FREEZE_CREATES} keyed creates, the busiest node frozen (SIGSTOP) for 45 s: each key one user, no 404, reads back within 20 s, the node rejoins`, async function () {
    this.timeout(600_000);
    const c = cluster!;
    const gw = gateway!;
    const admin = httpAs(['admin:all'], 'cluster-freeze');
    const victim = await nodeToKill(c, gw);
    const probing = startProbes(gw.baseUrl, admin);
    probeStops.push(probing.stop);
    const run = keyedCreates(gw.baseUrl, admin, 'freeze', FREEZE_CREATES);
    let frozeAt = 0;
    const frozen = (async () => {
      await eventually(
        async () => {
          if (run.done() < FREEZE_AFTER) throw new Error(`${run.done()} answered`);
        },
        180_000,
        20,
      );
      frozeAt = Date.now();
      c.freeze(victim);
      await new Promise((r) => setTimeout(r, FROZEN_MS));
      c.resume(victim);
    })();
    try {
      await Promise.all([run.finished, frozen]);
    } finally {
      c.resume(victim);
    }
    await probing.stop();
    const { probes } = probing;
    const duringFreeze = probes.filter((p) => p.at >= frozeAt && p.at < frozeAt + FROZEN_MS);
    const afterFreeze = probes.filter((p) => p.at >= frozeAt);
    expect(
      afterFreeze.filter((p) => p.route === 404),
      'a known route never answers 404',
    ).to.deep.equal([]);
    const lastBadRead = [...duringFreeze].reverse().find((p) => p.route !== 200);
    const readsBackMs = lastBadRead ? lastBadRead.at - frozeAt : 0;
    const healthDown = duringFreeze.filter((p) => p.health !== 200);
    const retried = run.attempts.filter((n) => n > 1).length;
    const longest = Math.max(...run.tookMs);
    // What the outside saw, for docs/operations.md ("Losing a node").
    console.log(
      `      node freeze: reads not 200 until ${readsBackMs} ms after the freeze (${duringFreeze.filter((p) => p.route !== 200).length} of ${duringFreeze.length} probes); ` +
        `/health not 200 in ${healthDown.length} probes, the last ${healthDown.length ? healthDown[healthDown.length - 1]!.at - frozeAt : 0} ms after; ` +
        `${retried} of ${FREEZE_CREATES} creates retried (at most ${Math.max(...run.attempts)} attempts, the longest answered ${longest} ms after it was first sent); ` +
        `creates answered: ${run.answered.map((r) => r.status).join('').length > 0 ? [...new Set(run.answered.map((r) => r.status))].join('/') : '-'}`,
    );
    const resumedAt = Date.now();
    // The node comes back and rejoins (autoheal: the side with fewer clients restarts once they meet again), as a
    // node that never froze sees it.
    const witness = c.nodes.find((n) => n !== victim)!;
    await eventually(
      async () => {
        const running = await c.runningNodes(witness).catch((): string[] => []);
        if (!c.nodes.every((n) => running.includes(n.name))) throw new Error(`running: ${running.join(', ')}`);
      },
      120_000,
      1000,
    );
    console.log(`      rejoined ${Date.now() - resumedAt} ms after the resume`);

    await expectOneUserPerKey(db!.url, run.emails, run.answered, [200, 201]);
    expect(readsBackMs, 'reads answer 200 again within 20 s of the freeze').to.be.below(READS_BACK_MS);
    for (const p of [gw.child, ...services.map((s) => s.child)])
      expect(p.exitCode, 'no gateway or service process exits').to.equal(null);
    expect(await c.runningNodes(witness)).to.include(victim.name);
  });
});

interface Probe {
  at: number;
  route: number;
  health: number;
}

/** A known route and /health, every 100 ms, until stop(). */
function startProbes(baseUrl: string, admin: HttpFn): { probes: Probe[]; stop: () => Promise<void> } {
  const probes: Probe[] = [];
  let running = true;
  const status = (url: string) =>
    admin('GET', url).then(
      (r) => r.status,
      () => 0,
    );
  const loop = (async () => {
    while (running) {
      const [route, health] = await Promise.all([
        status(`${baseUrl}/api/users?pageSize=1`),
        status(`${baseUrl}/health`),
      ]);
      probes.push({ at: Date.now(), route, health });
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  return {
    probes,
    stop: async () => {
      running = false;
      await loop;
    },
  };
}

/**
 * `count` keyed creates of users `<label>-<i>@example.com` from CLIENTS clients, each as the README asks a client to
 * be: 5xx and 409 "still being processed" are retried with the same key (every 250 ms, at most 60 attempts).
 */
function keyedCreates(baseUrl: string, admin: HttpFn, label: string, count: number) {
  const emails = Array.from({ length: count }, (_, i) => `${label}-${i}@example.com`);
  const keys = emails.map(() => randomUUID());
  const attempts = new Array<number>(count).fill(0);
  const tookMs = new Array<number>(count).fill(0);
  const answered: HttpResult[] = [];
  let done = 0;
  const createWithRetries = async (i: number): Promise<HttpResult> => {
    const started = Date.now();
    for (;;) {
      attempts[i]++;
      const res = await admin('POST', `${baseUrl}/api/users`, {
        body: { email: emails[i], password: 'long-enough-1' },
        headers: { 'idempotency-key': keys[i]! },
      }).catch((): HttpResult => ({ status: 0, headers: new Headers(), text: 'connection failed', body: undefined }));
      const again =
        res.status === 0 ||
        res.status >= 500 ||
        (res.status === 409 && res.body?.conflictingField === 'Idempotency-Key');
      tookMs[i] = Date.now() - started;
      if (!again || attempts[i] >= 60) return res;
      await new Promise((r) => setTimeout(r, 250));
    }
  };
  let next = 0;
  const finished = Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (next < count) {
        const i = next++;
        answered[i] = await createWithRetries(i);
        done++;
      }
    }),
  ).then(() => undefined);
  return { emails, keys, attempts, tookMs, answered, finished, done: () => done };
}

/** Every key answered 201 (or 200, a replay), and exactly one stored user per key: the one each answer names. */
async function expectOneUserPerKey(
  dbUrl: string,
  emails: string[],
  answered: HttpResult[],
  ok: readonly number[],
): Promise<void> {
  expect(
    answered.map((r, i) => (ok.includes(r.status) ? '' : `${emails[i]}: ${r.status} ${r.text}`)).filter(Boolean),
  ).to.deep.equal([]);
  const stored = await usersWithEmails(dbUrl, emails);
  expect(stored, 'each key ends with exactly one user').to.have.length(emails.length);
  const idOf = new Map(stored.map((u) => [u.email, u.user_id]));
  answered.forEach((r, i) => {
    expect(r.body.userId, emails[i]).to.equal(idOf.get(emails[i]!));
  });
}

/** The node holding most of the processes' connections (the gateway's own on a tie). */
async function nodeToKill(cluster: RabbitCluster, gateway: GatewayProcess): Promise<ClusterNode> {
  const health = await httpAs(['admin:all'], 'cluster-health')('GET', `${gateway.baseUrl}/health`);
  const gatewayNode = cluster.nodes.find((n) => `127.0.0.1:${n.amqpPort}` === health.body?.bus?.node);
  expect(gatewayNode, `the gateway names its node in /health: ${health.text}`).not.to.equal(undefined);
  const counts = await cluster.connectionsByNode(cluster.nodes[0]!);
  let best = gatewayNode!;
  for (const node of cluster.nodes) if ((counts.get(node.name) ?? 0) > (counts.get(best.name) ?? 0)) best = node;
  return best;
}

async function usersWithEmails(url: string, emails: string[]): Promise<{ user_id: string; email: string }[]> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return (
      await client.query('select user_id, lower(email) as email from users where lower(email) = any($1)', [emails])
    ).rows;
  } finally {
    await client.end();
  }
}
