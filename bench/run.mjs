#!/usr/bin/env node
/**
 * `npm run bench`: starts every configuration itself, drives it on loopback with autocannon (bounded runs,
 * configurations alternated), and writes bench/REPORT.md.
 *
 *   (a) this gateway, full pipeline (JWT HS256 + permission + schema validation), embedded bus, users service in-process
 *   (b) the same over RabbitMQ, the users service in its own process
 *   (c) floor: bare Express Gateway, a minimal policy doing one amqplib RPC to a minimal amqplib service
 *   (d) ceiling: bare Express Gateway, a policy answering the JSON itself
 *   (e) peer: moleculer-web 0.11 + moleculer 0.15, AMQP transporter, gateway and service in separate processes
 *   (f) bus limit: amqplib RPC with no HTTP, same minimal service as (c)
 *   (g) as (b) with `routing: table`;  (h) as (b) on a hand-written route running contract-router alone
 *   (p) as (c) with the bus message the product sends and its reply envelope: the protocol floor
 *   (o) as (b) with metrics and tracing on (a metrics port, an OpenTelemetry SDK registered without exporter)
 *   (B) as (b), gateway and service built from the commit given by --before=<git ref>
 *   (m) as (b) with generated pipelines of one plugin step after the rate limit (issue 37 item 6, a prototype
 *       preloaded from bench/lib/one-step-gateway.cjs; only with --only=…,m)
 *   (q) as (b) with BUS_QUEUE_TYPE=quorum: the service's work queue a quorum queue (on a cluster when BENCH_AMQP_URL lists one)
 *   (l) b-list: GET /api/users?pageSize=100 (~28 KB);  (w) b-create: POST /api/users with validation and an
 *       Idempotency-Key;  both served from memory by bench/services/payload-service.js;  (k) as (c), a reply of (l)'s size
 * plus a reply-size sweep (--sweep=1000,10000,100000,1000000 bytes, --sweep-connections=16, --skip-sweep): (b) and (c)
 * on replies of each size, gateway CPU per request and per KB.
 * plus discovery at scale (1,000 contracts), with routing: auto (the default) and endpoints: time to a new contract's first 2xx, throughput
 * vs 10 contracts, RSS. `npm run bench:pipeline` (bench/pipeline.mjs) measures the plugin's own steps alone.
 *
 * Flags: --other-node=<node binary> (adds (b@) and (c@): (b) and (c) run by that Node, in the same rotation),
 * --quick (under 2 minutes, for development), --only=a,b,… , --skip-scale, --scale-routing=auto,endpoints,table, --rounds=N, --duration=S,
 * --observe[=metrics|tracing] (metrics on and/or an OpenTelemetry SDK without exporter in every configuration of this
 * gateway, (b) included; (o) has both on whatever the flag), --before=<git ref> (adds (B): that commit built in a
 * temporary git worktree), --connections=16,64,256, --profile=<key>[,<key>] (a CPU profile of those configurations' gateways into bench/profiles/, one
 * per measured run: start-up and warm-up left out), --alloc-profile=<key> (the same for allocations, freed ones
 * included), --report=<path>. Env: BENCH_HEAP_ARGS replaces `--max-old-space-size=128 --max-semi-space-size=16`; BENCH_READY_TIMEOUT_MS (default
 * 40000) is how long a started process may take to say it is ready.
 * Env: BENCH_AMQP_URL (default amqp://guest:guest@127.0.0.1:5672; loopback only; several, comma-separated, for the
 * nodes of a cluster: this gateway and its service get the list, the amqplib floors and peers the first node).
 */
import { execFile, execFileSync } from 'node:child_process';
import { parse as parseYaml } from 'yaml';
import { createRequire } from 'node:module';
import { mkdtempSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { freePort } from './lib/free-port.mjs';
import {
  BENCH,
  HEAP_ARGS,
  ROOT,
  rootRequire,
  sleep,
  startNode as startBenchNode,
  stopChild,
} from './lib/node-process.mjs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

const autocannon = rootRequire('autocannon');
const { SignJWT } = rootRequire('jose');
const amqp = rootRequire('amqplib');

// ------------------------------------------------------------------ options

const argv = process.argv.slice(2);
const flag = (name) => argv.includes(`--${name}`);
const option = (name) => argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
const QUICK = flag('quick');
const OPTS = {
  quick: QUICK,
  rounds: Number(option('rounds') ?? (QUICK ? 1 : 3)),
  durationS: Number(option('duration') ?? (QUICK ? 2 : 10)),
  connections: (option('connections') ?? '16,64,256').split(',').map(Number),
  // Express Gateway's first ~10,000 requests are slow (a deprecated Buffer() per request id): warm up past them.
  warmupRequests: Number(option('warmup') ?? (QUICK ? 10500 : 12000)),
  scaleContracts: 1000,
  scaleRounds: Number(option('scale-rounds') ?? (QUICK ? 1 : 3)),
  scaleDurationS: QUICK ? 2 : 10,
  // --quick leaves out (g) and (h), the diagnostic variants of (b), to stay under 2 minutes.
  only: (
    option('only')?.split(',') ??
    (QUICK
      ? ['a', 'b', 'o', 'c', 'd', 'e', 'f']
      : ['a', 'b', 'q', 'o', 'g', 'h', 'l', 'w', 'c', 'k', 'p', 'd', 'e', 'f'])
  ).filter((k) => /^[a-hopqlwkmyzB]$/.test(k)),
  // The reply-size sweep, (b) and (c) on replies of these sizes in bytes (--sweep=…; --skip-sweep leaves it out).
  sweep: (option('sweep') ?? (QUICK ? '1000,100000' : '1000,10000,100000,1000000')).split(',').map(Number),
  skipSweep: flag('skip-sweep'),
  // Fewer connections than the main runs: 64 replies of 1 MB in flight, parsed, would not fit the gateway's 128 MB heap.
  sweepConnections: Number(option('sweep-connections') ?? 16),
  // A git ref whose build runs as (B) beside (b): the restructuring must not make (b) slower.
  before: option('before'),
  // Another Node binary: (b@) and (c@) run (b) and (c) on it, beside (b) and (c) on this one, in the same rotation.
  otherNode: option('other-node'),
  skipScale: flag('skip-scale'),
  // Metrics and tracing on in this gateway's processes (issue: their cost against the same build without them).
  observe: flag('observe') ? 'all' : option('observe'),
  // auto (the default) is endpoints at 10 contracts and the table at 1,000; endpoints shows what auto avoids.
  scaleRouting: (option('scale-routing') ?? 'auto,endpoints').split(','),
  profile: option('profile')?.split(',') ?? [],
  allocProfile: option('alloc-profile')?.split(',') ?? [],
  report: resolve(option('report') ?? join(BENCH, 'REPORT.md')),
};
// Next to (b) and (o) in the rotation, so that (B) runs close in time to what it is compared with.
if (OPTS.before && !OPTS.only.includes('B'))
  OPTS.only.splice(Math.max(OPTS.only.indexOf('o'), OPTS.only.indexOf('b')) + 1, 0, 'B');
if (OPTS.otherNode) for (const k of ['y', 'z']) if (!OPTS.only.includes(k)) OPTS.only.push(k);
if (!OPTS.otherNode && (OPTS.only.includes('y') || OPTS.only.includes('z'))) {
  console.error('(b@) and (c@) need --other-node=<path of a node binary>');
  process.exit(2);
}
/** The other Node's version, as its binary says (v20.20.2). */
const OTHER_NODE_VERSION = OPTS.otherNode ? execFileSync(OPTS.otherNode, ['-v']).toString().trim() : undefined;
if (!OPTS.before && OPTS.only.includes('B')) {
  console.error('(B) needs --before=<git ref>');
  process.exit(2);
}
const BUS_URLS = process.env.BENCH_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
/** The first node: what the amqplib floors and peers, which take one URL, connect to. */
const AMQP_URL = BUS_URLS.split(',')[0].trim();
if (
  !BUS_URLS.split(',').every((url) =>
    /^amqp:\/\/[^@]*@?(127\.\d+\.\d+\.\d+|localhost|\[::1\])(:\d+)?(\/|$)/.test(url.trim()),
  )
) {
  console.error('BENCH_AMQP_URL must point at loopback');
  process.exit(2);
}
const RUN_ID = `bench-${Date.now().toString(36)}-${process.pid}`;
const JWT_SECRET = `bench-secret-${RUN_ID}-0123456789abcdef0123456789`;
const tempDirs = [];

const log = (m) => console.log(`[bench ${new Date().toISOString().slice(11, 19)}] ${m}`);

// ------------------------------------------------------------------ processes

const children = new Set();

/** Every child reports its garbage-collection time here, and profiles itself when asked (bench/lib/probe.cjs). */
const PROBE_DIR = mkdtempSync(join(tmpdir(), `${RUN_ID}-probe-`));
tempDirs.push(PROBE_DIR);
const PROBE = ['--require', join(BENCH, 'lib', 'probe.cjs')];

/** The Node binary the configuration being started runs on (onOtherNode sets it for (b@) and (c@)). */
let execPath = process.execPath;

/** Starts what `start` starts on the other Node binary (--other-node). */
async function onOtherNode(start) {
  execPath = OPTS.otherNode;
  try {
    return await start();
  } finally {
    execPath = process.execPath;
  }
}

/** Starts `node script` and resolves once its output contains `ready`. Every child is killed on exit. */
function startNode(label, script, env, { ready, ipc, cwd, preload = [] } = {}) {
  return startBenchNode(label, script, {
    execPath,
    env: { BENCH_PROBE_DIR: PROBE_DIR, ...env },
    nodeArgs: [...PROBE, ...preload.flatMap((p) => ['--require', p])],
    ready,
    ipc,
    cwd,
    onSpawn: (child) => {
      children.add(child);
      child.once('exit', () => children.delete(child));
    },
  });
}

async function stopAll() {
  await Promise.all([...children].map(stopChild));
}

let cleaning;
function cleanup() {
  cleaning ??= (async () => {
    await stopAll();
    await deleteRunTopology().catch((e) => log(`cleanup of the broker failed: ${e.message}`));
    if (beforeTree) await removeBeforeTree();
    for (const d of tempDirs) rmSync(d, { recursive: true, force: true });
  })();
  return cleaning;
}
process.on('exit', () => {
  for (const c of children) c.kill('SIGKILL');
});
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.once(sig, () => {
    log(`${sig}: stopping every process of the run`);
    void cleanup().finally(() => process.exit(130));
  });
}

/** Exchanges and queues of this run (every name contains RUN_ID), found with rabbitmqctl; deleted. */
async function deleteRunTopology() {
  const list = (what) =>
    new Promise((ok) =>
      execFile('rabbitmqctl', ['-q', '--no-table-headers', what, 'name'], { timeout: 20000 }, (err, stdout) =>
        ok(
          err
            ? []
            : stdout
                .split('\n')
                .map((s) => s.trim())
                .filter((s) => s.includes(RUN_ID)),
        ),
      ),
    );
  const [exchanges, queues] = await Promise.all([list('list_exchanges'), list('list_queues')]);
  if (!exchanges.length && !queues.length) return;
  const conn = await amqp.connect(AMQP_URL);
  try {
    for (const [kind, names] of [
      ['queue', queues],
      ['exchange', exchanges],
    ]) {
      for (const name of names) {
        const ch = await conn.createChannel();
        ch.on('error', () => undefined);
        await (kind === 'queue' ? ch.deleteQueue(name) : ch.deleteExchange(name)).catch(() => undefined);
        await ch.close().catch(() => undefined);
      }
    }
  } finally {
    await conn.close().catch(() => undefined);
  }
  log(`broker: deleted ${queues.length} queues and ${exchanges.length} exchanges of ${RUN_ID}`);
}

// ------------------------------------------------------------------ (B): the build of another commit

/** The temporary git worktree of --before, once added: { dir, sha }; the short sha stays for the report. */
let beforeTree;
let beforeSha;

function run(cmd, args, cwd, timeout = 300000) {
  return new Promise((ok, fail) =>
    execFile(cmd, args, { cwd, timeout, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) =>
      err ? fail(new Error(`${cmd} ${args.join(' ')}: ${err.message}\n${stdout}${stderr}`)) : ok(stdout.trim()),
    ),
  );
}

/**
 * Checks out `ref` in a temporary worktree (detached, so no branch is made), links this checkout's node_modules
 * into it and builds it: (B) runs its dist/ the way (b) runs ours. Removed at the end of the run.
 */
async function buildBefore(ref) {
  const sha = await run('git', ['rev-parse', '--verify', `${ref}^{commit}`], ROOT);
  const dir = join(mkdtempSync(join(tmpdir(), `${RUN_ID}-before-`)), 'tree');
  tempDirs.push(dirname(dir));
  await run('git', ['worktree', 'add', '--detach', dir, sha], ROOT);
  beforeSha = sha.slice(0, 7);
  beforeTree = { dir, sha: beforeSha };
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  log(`building ${ref} (${beforeTree.sha}) in ${dir}`);
  await run('npm', ['run', 'build', '--silent'], dir, 600000);
  return beforeTree;
}

async function removeBeforeTree() {
  const { dir } = beforeTree;
  beforeTree = undefined;
  // The link first, so that nothing removing the tree can reach this checkout's node_modules through it.
  rmSync(join(dir, 'node_modules'), { force: true });
  await run('git', ['worktree', 'remove', '--force', dir], ROOT).catch((e) =>
    log(`removing the worktree of --before failed: ${e.message}`),
  );
  await run('git', ['worktree', 'prune'], ROOT).catch(() => undefined);
}

function rssMb(pid) {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : NaN;
  } catch {
    return NaN;
  }
}

/** The broker's process (RabbitMQ's Erlang VM on this machine), whose CPU per request is reported too; undefined if not visible. */
let brokerPid;
function findBroker() {
  if (brokerPid !== undefined) return brokerPid;
  try {
    for (const d of readdirSync('/proc')) {
      if (!/^\d+$/.test(d)) continue;
      try {
        if (readFileSync(`/proc/${d}/comm`, 'utf8').trim() === 'beam.smp') return (brokerPid = Number(d));
      } catch {
        // gone meanwhile
      }
    }
  } catch {
    // no /proc
  }
  return (brokerPid = NaN);
}

/** CPU time (user + system) a process has used, in µs; clock ticks are 100 Hz on Linux. */
function cpuUs(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10000;
  } catch {
    return NaN;
  }
}

function gcTotals(pid) {
  try {
    return JSON.parse(readFileSync(join(PROBE_DIR, `${pid}.json`), 'utf8'));
  } catch {
    return undefined;
  }
}

/** Milliseconds a process has spent in garbage collection so far: its probe writes them when sent SIGUSR2. */
async function gcMs(pid) {
  const before = gcTotals(pid)?.seq;
  try {
    process.kill(pid, 'SIGUSR2');
  } catch {
    return NaN;
  }
  for (let i = 0; i < 50; i++) {
    const t = gcTotals(pid);
    if (t && t.seq !== before) return t.minor + t.major + t.incremental + t.weakcb;
    await sleep(10);
  }
  return NaN;
}

// ------------------------------------------------------------------ HTTP helpers

function token(permissions) {
  return new SignJWT({ permissions, email: 'bench@example.com', name: 'Bench' })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject('bench-user')
    .setIssuedAt()
    .setExpirationTime('4h')
    .sign(new TextEncoder().encode(JWT_SECRET));
}

async function until(what, check, timeoutMs = 30000, everyMs = 50) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await check()) return;
    } catch {
      // not yet
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** Creates the user that every GET reads (through the gateway, as a client would) and returns its id. */
async function seedUser(base, auth) {
  const res = await fetch(`${base}/api/users`, {
    method: 'POST',
    headers: { authorization: auth, 'content-type': 'application/json' },
    body: JSON.stringify({
      email: `bench-${Math.random().toString(36).slice(2)}@example.com`,
      firstName: 'Ada',
      lastName: 'Lovelace',
      password: 'correct-horse-battery',
    }),
  });
  if (res.status !== 201) throw new Error(`seeding the user failed: ${res.status} ${await res.text()}`);
  return (await res.json()).userId;
}

function cannon(opts) {
  return new Promise((ok, fail) => {
    autocannon({ timeout: 10, ...opts }, (err, result) => (err ? fail(err) : ok(result)));
  });
}

/** One bounded run against `target`, with the gateway's RSS sampled meanwhile (peak). */
async function measureHttp(target, connections, durationS) {
  let peak = 0;
  const sampler = setInterval(() => {
    for (const pid of target.rssPids) peak = Math.max(peak, rssMb(pid) || 0);
  }, 250);
  try {
    const groups = [target.rssPids, target.servicePids ?? [], [findBroker()]];
    const cpu0 = groups.map((g) => g.map(cpuUs));
    const gc0 = await Promise.all(target.rssPids.map(gcMs));
    const r = await cannon({ ...requestOf(target), connections, duration: durationS });
    const n = Math.max(1, r.requests.total);
    const [gw, svc, broker] = groups.map((g, j) => g.reduce((sum, pid, i) => sum + cpuUs(pid) - cpu0[j][i], 0) / n);
    const gc1 = await Promise.all(target.rssPids.map(gcMs));
    noteProfile(target, r.requests.total);
    if (r.errors + r.non2xx > 0) {
      const codes = Object.entries(r.statusCodeStats ?? {})
        .filter(([code]) => !code.startsWith('2'))
        .map(([code, s]) => `${code}×${s.count}`);
      log(
        `${target.key} @${connections}: ${r.errors} errors (of which ${r.timeouts} timed out after 10 s), non-2xx ${codes.join(' ') || r.non2xx}`,
      );
    }
    const gc = (gc1.reduce((sum, t, i) => sum + t - gc0[i], 0) * 1000) / n;
    const ok = r['2xx'];
    return {
      rps: ok / r.duration,
      p50: r.latency.p50,
      p99: r.latency.p99,
      errors: r.errors + r.non2xx,
      timeouts: r.timeouts,
      rss: peak || NaN,
      cpuPerReq: gw,
      gcPerReq: gc,
      serviceCpuPerReq: target.servicePids ? svc : NaN,
      brokerCpuPerReq: broker,
    };
  } finally {
    clearInterval(sampler);
  }
}

/** What autocannon sends for `target`: a GET of its url, or its own method and body (`[<id>]` made unique per request). */
function requestOf(target) {
  return {
    url: target.url,
    headers: target.headers,
    method: target.method ?? 'GET',
    body: target.body,
    idReplacement: target.body !== undefined,
  };
}

async function warmUp(target, amount) {
  const r = await cannon({ ...requestOf(target), connections: 64, amount });
  if (r['2xx'] === 0) throw new Error(`${target.key}: no 2xx during warm-up (${r.non2xx} non-2xx, ${r.errors} errors)`);
}

// ------------------------------------------------------------------ configurations

const TOPOLOGY = {
  a: 'this gateway, full pipeline (jwt-dev-auth HS256 ▸ permission ▸ schema-validation ▸ contract-router), embedded bus; the users service in the gateway process (`npm start`), a user once read answered from memory as in (b)',
  b: 'this gateway, full pipeline, RabbitMQ; the users service in its own process (`dist/scripts/users-service.js`, with bench/lib/cached-user-reads.cjs preloaded: a user once read answered from memory, so its database is not what is measured)',
  c: 'floor: bare Express Gateway 1.16, one policy doing one amqplib RPC (reply bytes passed on); minimal amqplib service in its own process',
  k: "as (c), the reply as many bytes as (b-list)'s page of 100 (bench/lib/user.js payload()): the floor (b-list) is compared with",
  p: 'protocol floor: as (c), but the policy sends the message the product sends (`{input}` body, ids and the user as headers, expiration, mandatory, a deadline timer) and unwraps the `{ok, result}` reply (parsed and serialised again); no authentication, permission, validation or trace ids',
  d: 'ceiling: bare Express Gateway 1.16, one policy answering the JSON itself; no bus',
  e: 'peer: moleculer-web 0.11 gateway + moleculer 0.15 service, AMQP transporter (prefetch 16, Nagle off), separate processes, no auth',
  f: 'bus limit: amqplib RPC client with N requests in flight, no HTTP; same minimal service as (c)',
  g: 'as (b), with `routing: table` (CONTRACT_ROUTING=table): one generated apiEndpoint, the path matched by the plugin',
  h: 'as (b), but the request goes to a hand-written endpoint whose pipeline is contract-router alone: no trace ids, CORS, rate limit, token, permission or input check (the output check and the bus are the same)',
  o: 'as (b), with metrics and tracing on: a metrics port (METRICS_PORT, not scraped during the runs) and an OpenTelemetry SDK registered without exporter (bench/lib/tracing-no-export.cjs: a BasicTracerProvider and an AsyncLocalStorage context manager), so the spans are made and not shipped',
  q: "as (b), with `BUS_QUEUE_TYPE=quorum` for the users service: its work queue is a quorum queue (replicated over every node of BENCH_AMQP_URL's cluster; on one node, a quorum queue of one member), the requests still unconfirmed",
  l: "as (b), `GET /api/users?pageSize=100` (a reply of about 28 KB), the users service's own ListUsersQuery contract served from memory by bench/services/payload-service.js (the SDK over RabbitMQ), so no database is measured",
  w: "as (b), `POST /api/users` with a new email and a new `Idempotency-Key` each (input validation, the key to the service), the users service's own CreateUserCommand contract served from memory by bench/services/payload-service.js with the SDK's MemoryIdempotencyStore (no database, no password hash: no password sent); the token holds `users:create`",
  B: "as (b), with the gateway and the users service built from the commit given by `--before` (checked out in a temporary git worktree, built with `npm run build`, this checkout's node_modules linked)",
  y: 'as (b), every process of it (gateway, users service) run by the Node binary given by `--other-node`',
  z: 'as (c), every process of it run by the Node binary given by `--other-node`',
  m: 'as (b), with the generated pipelines request-trace ▸ cors ▸ contract-rate-limit ▸ contract-endpoint, where contract-endpoint is one host step running the steps of jwt-dev-auth, permission, schema-validation and contract-router in one runner (issue 37 item 6: a prototype preloaded from bench/lib/one-step-gateway.cjs, not part of the plugin)',
};
const NAMES = {
  a: '(a) gateway, embedded',
  b: '(b) gateway, RabbitMQ',
  o: '(o) (b) with metrics and tracing on',
  B: '(B) (b) before',
  m: '(m) (b) with one plugin step',
  y: `(b@) (b) on Node ${OTHER_NODE_VERSION ?? 'other'}`,
  z: `(c@) (c) on Node ${OTHER_NODE_VERSION ?? 'other'}`,
  q: '(q) (b) with quorum queues',
  g: '(g) gateway, RabbitMQ, routing: table',
  h: '(h) gateway, RabbitMQ, contract-router only',
  l: '(b-list) GET a page of 100',
  k: "(c-list) floor, reply of (b-list)'s size",
  w: '(b-create) POST with Idempotency-Key',
  c: '(c) floor: EG + amqplib RPC',
  p: '(p) protocol floor: (c) with our bus message',
  d: '(d) ceiling: EG answers',
  e: '(e) peer: moleculer-web',
  f: '(f) bus: amqplib RPC, no HTTP',
};

function tempDir(label) {
  const d = mkdtempSync(join(tmpdir(), `${RUN_ID}-${label}-`));
  tempDirs.push(d);
  return d;
}

const profileRuns = new Map();

/** A profiled gateway wrote one profile for the run that just ended: say which, and over how many requests. */
function noteProfile(target, requests) {
  const ext = OPTS.profile.includes(target.key)
    ? 'cpuprofile'
    : OPTS.allocProfile.includes(target.key)
      ? 'heapprofile'
      : undefined;
  if (!ext) return;
  const pid = target.rssPids[0];
  const n = (profileRuns.get(pid) ?? 0) + 1;
  profileRuns.set(pid, n);
  log(
    `profile of this run: bench/profiles/${pid}-${n}.${ext} (${requests} requests; node bench/profile-summary.mjs <file> --requests=${requests})`,
  );
}

/** Environment that makes the probe of `key`'s gateway profile the measured runs (see bench/lib/probe.cjs). */
function profileEnv(key) {
  const mode = OPTS.profile.includes(key) ? 'cpu' : OPTS.allocProfile.includes(key) ? 'alloc' : undefined;
  if (!mode) return {};
  const dir = join(BENCH, 'profiles');
  mkdirSync(dir, { recursive: true });
  return { BENCH_PROFILE: mode, BENCH_PROFILE_DIR: dir };
}

/**
 * (h): beside the generated routes, a hand-written endpoint whose pipeline is contract-router alone (no trace, CORS,
 * rate limit, authentication, permission or input validation), so (b) against (h) is what those steps cost.
 */
const ROUTER_ONLY_CONFIG = `http:
  port: \${PORT:-8080}
  hostname: 127.0.0.1
apiEndpoints:
  bench-router-only:
    host: '*'
    paths: ['/bench/users/:userId']
    methods: [GET]
serviceEndpoints: {}
policies:
  - contract-router
pipelines:
  bench-router-only:
    apiEndpoints: [bench-router-only]
    policies:
      - contract-router: [{ action: { messageType: GetUserQuery, public: true } }]
`;

/**
 * One of this gateway's configurations. `observe`: metrics on and/or spans made (no exporter), by default what
 * --observe asks; `root`: the checkout whose dist/ runs (another commit's for (B)).
 */
async function startOurGateway(
  key,
  {
    overRabbit,
    routing = 'auto',
    routerOnly = false,
    observe = OPTS.observe,
    root = ROOT,
    queueType = 'classic',
    service = 'users',
    oneStep = false,
  },
) {
  const port = await freePort();
  const prefix = `${RUN_ID}-${key}`;
  // No access log: a line per request would measure the terminal.
  const env = {
    PORT: String(port),
    EG_CONFIG_DIR: tempDir(key),
    BUS_PREFIX: prefix,
    JWT_SECRET,
    LOG_LEVEL: 'warn',
    BUS_URL: overRabbit ? BUS_URLS : 'embedded',
    CONTRACT_ROUTING: routing,
    ACCESS_LOG: 'false',
  };
  if (observe === 'all' || observe === 'metrics')
    Object.assign(env, { METRICS_PORT: String(await freePort()), METRICS_HOST: '127.0.0.1' });
  if (observe === 'all' || observe === 'tracing')
    env.NODE_OPTIONS = `--require ${join(BENCH, 'lib', 'tracing-no-export.cjs')}`;
  // start.js fills in the rest of the config directory from config/ and keeps a gateway.config.yml it finds.
  if (routerOnly) writeFileSync(join(env.EG_CONFIG_DIR, 'gateway.config.yml'), ROUTER_ONLY_CONFIG);
  if (overRabbit) env.START_REFERENCE_SERVICES = 'false';
  // The users service, in the gateway's process (a) or its own, answers a user once read from memory.
  const cached = { preload: [join(BENCH, 'lib', 'cached-user-reads.cjs')], cwd: root };
  const gateway = overRabbit ? { cwd: root } : { ...cached };
  if (oneStep) gateway.preload = [join(BENCH, 'lib', 'one-step-gateway.cjs')];
  const gw = await startNode(
    `gateway (${key})`,
    join(root, 'dist', 'scripts', 'start.js'),
    { ...env, ...profileEnv(key), BENCH_ROOT: root },
    { ready: 'gateway ready', ...gateway },
  );
  const procs = [gw];
  if (overRabbit && service === 'users')
    procs.push(
      await startNode(
        `users-service (${key})`,
        join(root, 'dist', 'scripts', 'users-service.js'),
        {
          BUS_URL: BUS_URLS,
          BUS_PREFIX: prefix,
          BUS_QUEUE_TYPE: queueType,
          DATA_DIR: join(env.EG_CONFIG_DIR, 'users-data'),
          BENCH_ROOT: root,
        },
        cached,
      ),
    );
  if (overRabbit && service === 'payload')
    procs.push(
      await startNode(`payload-service (${key})`, join(BENCH, 'services', 'payload-service.js'), {
        BUS_URL: BUS_URLS,
        BUS_PREFIX: prefix,
        BENCH_ROOT: root,
      }),
    );
  const base = `http://127.0.0.1:${port}`;
  const admin = `Bearer ${await token(['users:read', 'users:create'])}`;
  if (oneStep)
    await until(`${key}: the generated pipeline is one plugin step`, async () =>
      readFileSync(join(env.EG_CONFIG_DIR, 'gateway.config.yml'), 'utf8').includes('- contract-endpoint:'),
    );
  await until(
    `${key}: POST /api/users routed`,
    async () => (await fetch(`${base}/api/users?page=1`, { headers: { authorization: admin } })).status === 200,
  );
  const userId = await seedUser(base, admin);
  const reader = `Bearer ${await token(['users:read'])}`;
  return {
    key,
    url: routerOnly ? `${base}/bench/users/${userId}` : `${base}/api/users/${userId}`,
    base,
    headers: { authorization: reader },
    admin,
    rssPids: [gw.pid],
    servicePids: overRabbit ? [procs[1].pid] : undefined,
    procs,
    gateway: gw,
    configDir: env.EG_CONFIG_DIR,
    prefix,
  };
}

/** (b-list): a page of 100 users from the payload service. */
async function startList(key) {
  const t = await startOurGateway(key, { overRabbit: true, service: 'payload' });
  return { ...t, url: `${t.base}/api/users?pageSize=100` };
}

/** (b-create): a create with a new email and Idempotency-Key each time (autocannon puts a new id for `[<id>]`). */
async function startCreate(key) {
  const t = await startOurGateway(key, { overRabbit: true, service: 'payload' });
  const body = JSON.stringify({ email: 'bench-[<id>]@example.com', firstName: 'Ada', lastName: 'Lovelace' });
  return {
    ...t,
    url: `${t.base}/api/users`,
    method: 'POST',
    body,
    headers: { authorization: t.admin, 'content-type': 'application/json', 'idempotency-key': 'bench-[<id>]' },
  };
}

/** The size of (b-list)'s reply body, which (c-list)'s floor answers as many bytes of. */
const LIST_BYTES = (() => {
  const { listedUser } = createRequire(import.meta.url)('./lib/user.js');
  const users = Array.from({ length: 100 }, (_, i) => listedUser(i));
  return JSON.stringify({
    users,
    page: 1,
    pageSize: 100,
    totalCount: 100,
    totalPages: 1,
    hasNext: false,
    hasPrevious: false,
  }).length;
})();

async function startBareEg(key, mode, replyBytes) {
  const port = await freePort();
  const queue = `${RUN_ID}.${key}.users`;
  const procs = [];
  const rpc = mode === 'rpc' || mode === 'protocol';
  if (rpc)
    procs.push(
      await startNode(`rpc-service (${key})`, join(BENCH, 'services', 'rpc-service.js'), {
        BENCH_AMQP_URL: AMQP_URL,
        BENCH_QUEUE: queue,
      }),
    );
  const gw = await startNode(`bench EG (${key})`, join(BENCH, 'eg-host', 'start.js'), {
    PORT: String(port),
    EG_CONFIG_DIR: tempDir(key),
    BENCH_MODE: mode,
    BENCH_AMQP_URL: AMQP_URL,
    BENCH_QUEUE: queue,
    LOG_LEVEL: 'warn',
    ...profileEnv(key),
  });
  procs.push(gw);
  const id = replyBytes === undefined ? 'u-bench' : `pad-${replyBytes}`;
  return {
    key,
    url: `http://127.0.0.1:${port}/api/users/${id}`,
    base: `http://127.0.0.1:${port}`,
    headers: {},
    rssPids: [gw.pid],
    servicePids: rpc ? [procs[0].pid] : undefined,
    procs,
  };
}

async function startMoleculer(key) {
  const port = await freePort();
  const env = { BENCH_AMQP_URL: AMQP_URL, BENCH_NAMESPACE: `${RUN_ID}-${key}` };
  const svc = await startNode(`moleculer service (${key})`, join(BENCH, 'moleculer', 'service.js'), env);
  const gw = await startNode(`moleculer-web (${key})`, join(BENCH, 'moleculer', 'gateway.js'), {
    ...env,
    PORT: String(port),
    ...profileEnv(key),
  });
  const url = `http://127.0.0.1:${port}/api/users/u-bench`;
  await until(`${key}: moleculer route`, async () => (await fetch(url)).status === 200);
  return { key, url, headers: {}, rssPids: [gw.pid], servicePids: [svc.pid], procs: [svc, gw] };
}

async function startBus(key) {
  const queue = `${RUN_ID}.${key}.users`;
  const svc = await startNode(`rpc-service (${key})`, join(BENCH, 'services', 'rpc-service.js'), {
    BENCH_AMQP_URL: AMQP_URL,
    BENCH_QUEUE: queue,
  });
  return { key, queue, procs: [svc], bus: true };
}

async function measureBus(target, connections, durationS) {
  const proc = await startNode(
    `bus client (${connections})`,
    join(BENCH, 'services', 'bus-client.js'),
    {
      BENCH_AMQP_URL: AMQP_URL,
      BENCH_QUEUE: target.queue,
      BENCH_CONCURRENCY: String(connections),
      BENCH_DURATION_MS: String(durationS * 1000),
    },
    { ready: '"rps"' },
  );
  const line = proc
    .output()
    .split('\n')
    .find((l) => l.includes('"rps"'));
  const r = JSON.parse(line);
  return {
    rps: r.rps,
    p50: r.p50,
    p99: r.p99,
    errors: r.errors,
    rss: NaN,
    cpuPerReq: NaN,
    gcPerReq: NaN,
    serviceCpuPerReq: NaN,
    brokerCpuPerReq: NaN,
  };
}

// ------------------------------------------------------------------ statistics

const median = (xs) => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (!s.length) return NaN;
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

function summarise(samples) {
  return {
    rps: median(samples.map((s) => s.rps)),
    rpsMin: Math.min(...samples.map((s) => s.rps)),
    rpsMax: Math.max(...samples.map((s) => s.rps)),
    p50: median(samples.map((s) => s.p50)),
    p99: median(samples.map((s) => s.p99)),
    errors: samples.reduce((n, s) => n + s.errors, 0),
    timeouts: samples.reduce((n, s) => n + (s.timeouts ?? 0), 0),
    rss: Math.max(...samples.map((s) => (Number.isFinite(s.rss) ? s.rss : -1))),
    cpuPerReq: median(samples.map((s) => s.cpuPerReq)),
    gcPerReq: median(samples.map((s) => s.gcPerReq)),
    serviceCpuPerReq: median(samples.map((s) => s.serviceCpuPerReq)),
    brokerCpuPerReq: median(samples.map((s) => s.brokerCpuPerReq)),
    runs: samples.length,
    rounds: samples,
  };
}

// ------------------------------------------------------------------ reply-size sweep

/**
 * (b) and (c) on replies of each size in OPTS.sweep: (b) as GET /api/payloads/<bytes> (payload-service, the full
 * pipeline and output check), (c) as its RPC of `pad-<bytes>`, the same result bytes. Sizes and the two alternated.
 */
async function sizeSweep() {
  const b = await startOurGateway('sb', { overRabbit: true, service: 'payload' });
  const c = await startBareEg('sc', 'rpc');
  const at = (t, bytes) => ({
    ...t,
    url: t.key === 'sb' ? `${t.base}/api/payloads/${bytes}` : `${t.base}/api/users/pad-${bytes}`,
  });
  for (const t of [b, c]) await warmUp(at(t, OPTS.sweep[0]), OPTS.warmupRequests);
  const samples = {};
  for (let round = 0; round < OPTS.rounds; round++) {
    for (const bytes of OPTS.sweep) {
      const pair = round % 2 ? [c, b] : [b, c];
      for (const t of pair) {
        const r = await measureHttp(at(t, bytes), OPTS.sweepConnections, OPTS.durationS);
        ((samples[bytes] ??= {})[t.key] ??= []).push(r);
        log(
          `sweep round ${round + 1} ${t.key} ${bytes} B @${OPTS.sweepConnections}: ${r.rps.toFixed(0)}/s p99 ${fmt(r.p99, 1)} errors ${r.errors} cpu µs/req gw ${fmt(r.cpuPerReq)} (gc ${fmt(r.gcPerReq)})`,
        );
      }
    }
  }
  for (const t of [b, c]) for (const p of [...t.procs].reverse()) await stopChild(p.child);
  return OPTS.sweep.map((bytes) => ({ bytes, b: summarise(samples[bytes].sb), c: summarise(samples[bytes].sc) }));
}

function sweepSection(rows) {
  const L = [
    '## Reply-size sweep',
    '',
    `(b) as \`GET /api/payloads/<bytes>\` (bench/services/payload-service.js: the full pipeline, a result of listed users at least that long, checked against its outputSchema as any reply) and (c) answering the same result bytes; ${OPTS.sweepConnections} connections (64 replies of 1 MB in flight would not fit the gateway's 128 MB heap), ${OPTS.rounds} round(s) × ${OPTS.durationS} s, the two alternated. µs per KB: the gateway's CPU per request over the reply's size in KB (1 KB = 1000 bytes).`,
    '',
    '| reply | (b) req/s | (b) CPU µs/req | of which GC | (b) µs per KB | (c) req/s | (c) CPU µs/req | of which GC | (c) µs per KB | CPU (b)/(c) | errors (b), (c) |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const { bytes, b, c } of rows) {
    const kb = bytes / 1000;
    L.push(
      `| ${fmt(kb)} KB | ${fmt(b.rps)} | ${fmt(b.cpuPerReq)} | ${fmt(b.gcPerReq)} | ${fmt(b.cpuPerReq / kb, 1)} | ${fmt(c.rps)} | ${fmt(c.cpuPerReq)} | ${fmt(c.gcPerReq)} | ${fmt(c.cpuPerReq / kb, 1)} | ${fmt(ratio(b.cpuPerReq, c.cpuPerReq), 2)} | ${b.errors}, ${c.errors} |`,
    );
  }
  L.push('');
  return L.join('\n');
}

// ------------------------------------------------------------------ discovery at scale

async function scaleBenchmark(routing) {
  const target = await startOurGateway(`s-${routing}`, { overRabbit: true, routing });
  const announcer = await startNode(
    'scale announcer',
    join(BENCH, 'services', 'scale-announcer.js'),
    { BUS_URL: AMQP_URL, BUS_PREFIX: target.prefix },
    { ipc: true, ready: '\u0000never' },
  );
  const ask = (msg) =>
    new Promise((ok, fail) => {
      const on = (reply) => {
        if (reply.ready) return;
        announcer.child.off('message', on);
        if (reply.error) fail(new Error(reply.error));
        else ok(reply);
      };
      announcer.child.on('message', on);
      announcer.child.send(msg);
    });
  const get = (path) =>
    fetch(`${target.base}${path}`, { headers: target.headers }).then(async (r) => {
      await r.arrayBuffer();
      return r.status;
    });
  const lastAsset = (n) => `/api/asset${String(Math.floor((n - 1) / 4)).padStart(4, '0')}s/x`;
  // Generated apiEndpoints that serve contract routes: one per route (`contract:`), or the one table endpoint.
  const endpoints = () =>
    Object.entries(
      parseYaml(readFileSync(join(target.configDir, 'gateway.config.yml'), 'utf8')).apiEndpoints ?? {},
    ).filter(([name, e]) => e && (e.contract || name === 'contracts-api')).length;
  const usersContracts = 7;
  const small = 10 - usersContracts;
  const large = OPTS.scaleContracts;
  const samples = { small: [], large: [] };
  const info = { endpointsSmall: 0, endpointsLarge: 0, liveAfterMs: [] };
  for (let round = 0; round < OPTS.scaleRounds; round++) {
    for (const set of [small, large]) {
      const t0 = Date.now();
      await ask({ set });
      await until(
        `${set} contracts routed`,
        async () => (await get(lastAsset(set))) === 200 && (set === large || (await get(lastAsset(large))) === 404),
        60000,
        50,
      ).catch((err) => {
        throw new Error(
          `${err.message}; gateway output:\n${target.gateway.output().slice(-3000)}\nannouncer:\n${announcer.output().slice(-2000)}`,
        );
      });
      if (set === large) info.liveAfterMs.push(Date.now() - t0);
      // With one endpoint per route, a withdrawn route answers 404 before the file drops it: measure only once the
      // file the host serves has the set's endpoints (the plugin reloads the host right after writing it).
      const expected = routing === 'table' || (routing === 'auto' && set === large) ? 1 : set + usersContracts;
      await until(
        `${set} contracts written`,
        async () => Math.abs(endpoints() - expected) <= usersContracts + 3,
        30000,
        50,
      );
      await sleep(500);
      info[set === large ? 'endpointsLarge' : 'endpointsSmall'] = endpoints();
      await warmUp(target, 3000);
      const r = await measureHttp(target, 64, OPTS.scaleDurationS);
      samples[set === large ? 'large' : 'small'].push(r);
      log(
        `scale (routing: ${routing}): ${set === large ? large + usersContracts : 10} contracts: ${r.rps.toFixed(0)} req/s, p99 ${r.p99} ms`,
      );
    }
  }
  // (i) a new contract announced while 1,000 are known: announcement → first 2xx on its route.
  const sent = await ask({ latecomer: true });
  await until('the new contract routed', async () => (await get('/api/latecomers/x')) === 200, 30000, 20);
  const firstOkMs = Date.now() - sent.sentAt;
  await sleep(500);
  const rssIdle = rssMb(target.gateway.pid);
  for (const p of [announcer, ...target.procs].reverse()) await stopChild(p.child);
  return {
    routing,
    small: summarise(samples.small),
    large: summarise(samples.large),
    firstOkMs,
    rssIdle,
    contracts: large + usersContracts + 1,
    ...info,
  };
}

// ------------------------------------------------------------------ report

const fmt = (x, d = 0) => (Number.isFinite(x) ? x.toFixed(d) : '—');
const ratio = (x, y) => (Number.isFinite(x) && Number.isFinite(y) && y > 0 ? x / y : NaN);
const mark = (ok) => (ok === undefined ? '' : ok ? '✅ met' : '❌ not met');

/**
 * What a throughput target leaves the gateway, in CPU per request, on this machine: the gateway, the service and the
 * broker share its cores, so (b)'s req/s × their CPU per request is the share of the machine they got; at the same
 * share, a target rate leaves the gateway what the service and the broker do not take. Set beside what a reference
 * gateway spends in the same run, it says whether any plugin could meet the target here.
 */
function cpuBudget(b, targets) {
  if (!b || ![b.rps, b.cpuPerReq, b.serviceCpuPerReq, b.brokerCpuPerReq].every(Number.isFinite)) return '';
  const cores = cpus().length;
  const others = b.serviceCpuPerReq + b.brokerCpuPerReq;
  const share = (b.rps * (b.cpuPerReq + others)) / (cores * 1e6);
  const lines = targets
    .filter((t) => Number.isFinite(t.rps) && Number.isFinite(t.against?.cpuPerReq))
    .map((t) => {
      const left = (share * cores * 1e6) / t.rps - others;
      return `${t.label} (${fmt(t.rps)} req/s) leaves the gateway ${left > 0 ? `${fmt(left)} µs` : 'nothing'} per request, against ${fmt(t.against.cpuPerReq)} µs for ${t.what}`;
    });
  if (!lines.length) return '';
  return (
    `CPU budget at 64 connections (from the medians above): (b)'s gateway, service and broker spent ${fmt(b.cpuPerReq)} + ${fmt(b.serviceCpuPerReq)} + ${fmt(b.brokerCpuPerReq)} µs of CPU per request, ` +
    `${fmt(share * 100)}% of the machine's ${cores} cores at (b)'s rate (the rest went to the load generator, which runs on the same cores, and idle time). ` +
    `At that share, ${lines.join('; ')}. (b)'s gateway spent ${fmt(b.cpuPerReq)} µs. ` +
    'Where a target leaves the gateway less than its reference spends, the plugin cannot meet it on this machine at that share; only a larger share (less CPU for the broker, the service or the load generator, or more cores) could.'
  );
}

function report(results, scales, meta, sweep = []) {
  const L = [];
  const conns = OPTS.connections;
  const get = (k, c) => results[k]?.[c];
  L.push('# Benchmark report', '');
  if (OPTS.quick)
    L.push(
      '> **Quick run (`npm run bench -- --quick`)**: 1 round of short runs with a short warm-up, on a shared machine. The numbers show the format and the rough picture only; the figures that count come from a full `npm run bench` on a quiet machine.',
      '',
    );
  L.push(
    `Run ${meta.runId}, ${meta.date}. Node ${process.version}, ${cpus().length} cores, load average ${meta.loadBefore} before / ${meta.loadAfter} after. ` +
      `${OPTS.rounds} round(s) × ${OPTS.durationS} s per configuration and concurrency, configurations alternated (rotated each round), median of the rounds; warm-up ${OPTS.warmupRequests} requests per HTTP configuration. ` +
      'Every request (but those of (b-list), (c-list), (b-create) and the reply-size sweep, described with them) is `GET /api/users/<id>` of one user on 127.0.0.1; (a) and (b) send an HS256 JWT holding `users:read` and run the whole pipeline (the user is created through the gateway first). Every Node process runs with `' +
      HEAP_ARGS.join(' ') +
      '`, as the sidecar image runs the gateway. Total wall time: ' +
      `${fmt(meta.wallS)} s.`,
    '',
  );
  L.push('## Configurations', '');
  for (const k of Object.keys(NAMES)) if (results[k]) L.push(`- **${NAMES[k]}**: ${TOPOLOGY[k]}`);
  L.push('');
  for (const c of conns) {
    L.push(
      `## ${c} connections`,
      '',
      '| configuration | req/s | min–max of rounds | p50 ms | p99 ms | errors | gateway RSS MB | CPU µs/req: gateway | of which GC | service | broker |',
      '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    );
    for (const k of Object.keys(NAMES)) {
      const r = get(k, c);
      if (r)
        L.push(
          `| ${NAMES[k]} | ${fmt(r.rps)} | ${fmt(r.rpsMin)}–${fmt(r.rpsMax)} | ${fmt(r.p50, 1)} | ${fmt(r.p99, 1)} | ${r.errors}${r.timeouts ? ` (${r.timeouts} timed out)` : ''} | ${fmt(r.rss)} | ${fmt(r.cpuPerReq)} | ${fmt(r.gcPerReq)} | ${fmt(r.serviceCpuPerReq)} | ${fmt(r.brokerCpuPerReq)} |`,
        );
    }
    L.push('');
  }
  if (Object.values(results).some((byConn) => Object.values(byConn ?? {}).some((r) => r?.timeouts))) {
    L.push(
      "Timed out = no answer within autocannon's 10 s. Where a gateway process runs at full CPU (the embedded configuration, at 256 connections), Node accepts new connections slowly " +
        '(a bare Node HTTP server burning 300 µs per request drained its accept queue at about 25 connections per second under the same load), so some of the connections a run opens at its start wait seconds to be accepted; ' +
        'a request, once the gateway has it, was answered within a second in every check.',
      '',
    );
  }
  L.push(
    '## Ratios (same run)',
    '',
    `| ratio | ${conns.map((c) => `${c} conn.`).join(' | ')} |`,
    `|---|${conns.map(() => '---:').join('|')}|`,
  );
  const row = (label, f) => L.push(`| ${label} | ${conns.map((c) => fmt(f(c), 2)).join(' | ')} |`);
  row('(b) / (c) throughput: RabbitMQ pipeline vs floor', (c) => ratio(get('b', c)?.rps, get('c', c)?.rps));
  row('(b) / (c) p99 (≤ 1 is better)', (c) => ratio(get('b', c)?.p99, get('c', c)?.p99));
  row('(o) / (b) throughput: metrics and tracing on vs off', (c) => ratio(get('o', c)?.rps, get('b', c)?.rps));
  row('(q) / (b) throughput: quorum vs classic work queue', (c) => ratio(get('q', c)?.rps, get('b', c)?.rps));
  row('(q) / (b) p99 (≤ 1 is better)', (c) => ratio(get('q', c)?.p99, get('b', c)?.p99));
  row('gateway CPU per request, (o) / (b)', (c) => ratio(get('o', c)?.cpuPerReq, get('b', c)?.cpuPerReq));
  row('(b) / (B) throughput: this build vs before', (c) => ratio(get('b', c)?.rps, get('B', c)?.rps));
  row('gateway CPU per request, (b) / (B)', (c) => ratio(get('b', c)?.cpuPerReq, get('B', c)?.cpuPerReq));
  row(`gateway CPU per request, (b) / (b@): Node ${process.version} vs ${OTHER_NODE_VERSION ?? 'other'}`, (c) =>
    ratio(get('b', c)?.cpuPerReq, get('y', c)?.cpuPerReq),
  );
  row(`gateway CPU per request, (c) / (c@): Node ${process.version} vs ${OTHER_NODE_VERSION ?? 'other'}`, (c) =>
    ratio(get('c', c)?.cpuPerReq, get('z', c)?.cpuPerReq),
  );
  row('(b) / (b@) throughput', (c) => ratio(get('b', c)?.rps, get('y', c)?.rps));
  row('(b@) / (c@) CPU per request: what the plugin adds over the host on the other Node', (c) =>
    ratio(get('y', c)?.cpuPerReq, get('z', c)?.cpuPerReq),
  );
  row('gateway CPU per request, (m) / (b): one plugin step vs the separate steps', (c) =>
    ratio(get('m', c)?.cpuPerReq, get('b', c)?.cpuPerReq),
  );
  row('(b) / (e) throughput: RabbitMQ pipeline vs moleculer-web (reference, no target)', (c) =>
    ratio(get('b', c)?.rps, get('e', c)?.rps),
  );
  row('(b) / (e) p99 (≤ 1 is better)', (c) => ratio(get('b', c)?.p99, get('e', c)?.p99));
  row('(g) / (c) throughput: RabbitMQ pipeline, routing: table, vs floor', (c) =>
    ratio(get('g', c)?.rps, get('c', c)?.rps),
  );
  row('(b) / (h) throughput: full pipeline vs contract-router alone (what the steps before it cost)', (c) =>
    ratio(get('b', c)?.rps, get('h', c)?.rps),
  );
  row('(h) / (c) throughput: contract-router alone vs floor (our bus message and output check vs a bare RPC)', (c) =>
    ratio(get('h', c)?.rps, get('c', c)?.rps),
  );
  row('(p) / (c) throughput: protocol floor vs floor (what the bus message the design asks for costs by itself)', (c) =>
    ratio(get('p', c)?.rps, get('c', c)?.rps),
  );
  row('(b) / (p) throughput: RabbitMQ pipeline vs protocol floor (what the policies cost beyond the protocol)', (c) =>
    ratio(get('b', c)?.rps, get('p', c)?.rps),
  );
  row('(a) / (c) throughput: embedded pipeline vs floor', (c) => ratio(get('a', c)?.rps, get('c', c)?.rps));
  row('(a) / (d) throughput: embedded pipeline vs ceiling', (c) => ratio(get('a', c)?.rps, get('d', c)?.rps));
  row('(c) / (d) floor vs ceiling', (c) => ratio(get('c', c)?.rps, get('d', c)?.rps));
  row('(d) / (e) host ceiling vs moleculer-web', (c) => ratio(get('d', c)?.rps, get('e', c)?.rps));
  row('(e) / (c) moleculer-web vs floor', (c) => ratio(get('e', c)?.rps, get('c', c)?.rps));
  row('(c) / (f) floor vs bus limit', (c) => ratio(get('c', c)?.rps, get('f', c)?.rps));
  row('gateway CPU per request, (b) / (c) (machine-noise resistant)', (c) =>
    ratio(get('b', c)?.cpuPerReq, get('c', c)?.cpuPerReq),
  );
  row('gateway CPU per request, (b) / (e)', (c) => ratio(get('b', c)?.cpuPerReq, get('e', c)?.cpuPerReq));
  row('gateway GC per request, (b) / (c)', (c) => ratio(get('b', c)?.gcPerReq, get('c', c)?.gcPerReq));
  L.push('');
  L.push(
    '## Targets',
    '',
    'Each from this run at 64 connections (the medians above).',
    '',
    '| target | measured | status |',
    '|---|---|---|',
  );
  const at64 = (k) => get(k, 64);
  const target = (label, x, y, what, ok, digits = 2) => {
    const r = ratio(x, y);
    L.push(
      `| ${label} | ${fmt(r, 2)}× (${fmt(x, digits)} vs ${fmt(y, digits)} ${what}) | ${Number.isFinite(r) ? mark(ok(r)) : ''} |`,
    );
  };
  target(
    "gateway CPU per request, full pipeline over RabbitMQ (b) ≤ 1.35× the floor's (c)",
    at64('b')?.cpuPerReq,
    at64('c')?.cpuPerReq,
    'µs',
    (r) => r <= 1.35,
    0,
  );
  target("gateway GC per request (b) ≤ 1.4× (c)'s", at64('b')?.gcPerReq, at64('c')?.gcPerReq, 'µs', (r) => r <= 1.4, 0);
  target('throughput (b) / (c) ≥ 0.80', at64('b')?.rps, at64('c')?.rps, 'req/s', (r) => r >= 0.8, 0);
  if (at64('l') && at64('k'))
    target(
      "(b-list) gateway CPU per request ≤ 1.5× the floor's on a reply of the same size (c-list)",
      at64('l')?.cpuPerReq,
      at64('k')?.cpuPerReq,
      'µs',
      (r) => r <= 1.5,
      0,
    );
  target("p99 (b) ≤ 1.3× (c)'s", at64('b')?.p99, at64('c')?.p99, 'ms', (r) => r <= 1.3, 1);
  /**
   * Two builds or settings of the same gateway differ by a few percent: compared round by round (the two ran minutes
   * apart at most, so the machine's load drifts less between them), the median of the rounds' ratios.
   */
  const paired = (label, k1, k2, field, what, ok, digits = 0) => {
    const [x, y] = [at64(k1), at64(k2)];
    if (!x || !y) return;
    const each = x.rounds.map((s, i) => ratio(s[field], y.rounds[i]?.[field]));
    const r = median(each);
    L.push(
      `| ${label} | ${fmt(r, 2)}× (median of the rounds' ratios ${each.map((e) => fmt(e, 2)).join(', ')}; medians ${fmt(x[field], digits)} vs ${fmt(y[field], digits)} ${what}) | ${Number.isFinite(r) ? mark(ok(r)) : ''} |`,
    );
  };
  if (at64('o') && OPTS.observe)
    L.push(
      `| observability cost: (o)/(b) throughput ≥ 0.97 | not measured: --observe=${OPTS.observe} turned them on in (b) too | |`,
    );
  else paired('observability cost: (o)/(b) throughput, target ≥ 0.95', 'o', 'b', 'rps', 'req/s', (r) => r >= 0.95);
  // The same code built twice differs by a few percent from one run to the next: 3% is left for that.
  paired(
    `not slower than before: (b) / (B ${beforeSha ?? 'before'}) throughput ≥ 0.97`,
    'b',
    'B',
    'rps',
    'req/s',
    (r) => r >= 0.97,
  );
  paired('… and gateway CPU per request (b) / (B) ≤ 1.03', 'b', 'B', 'cpuPerReq', 'µs', (r) => r <= 1.03);
  for (const sc of scales) {
    const loss = 1 - ratio(sc.large.rps, sc.small.rps);
    const mode = `(routing: ${sc.routing}${sc.routing === 'auto' ? ', the default' : ''})`;
    L.push(
      `| (i) new contract announced → first 2xx, with 1,000 contracts known ≤ 3 s ${mode} | ${fmt(sc.firstOkMs)} ms | ${mark(sc.firstOkMs <= 3000)} |`,
    );
    L.push(
      `| (ii) throughput on one route, 1,000 vs 10 contracts: loss ≤ 10% ${mode} | ${fmt(loss * 100, 1)}% (${fmt(sc.large.rps)} vs ${fmt(sc.small.rps)} req/s) | ${mark(loss <= 0.1)} |`,
    );
    L.push(
      `| (iii) gateway RSS with 1,000 contracts < 200 MB ${mode} | ${fmt(sc.rssIdle)} MB idle, ${fmt(sc.large.rss)} MB peak under load | ${mark(Math.max(sc.rssIdle, sc.large.rss) < 200)} |`,
    );
  }
  L.push('');
  const de = conns.map((c) => ratio(get('d', c)?.rps, get('e', c)?.rps));
  if (de.some(Number.isFinite)) {
    L.push(
      `moleculer-web (e) is the reference peer, with no target: the host's ceiling (d), Express Gateway answering without any bus, measured ${de.map((x, i) => `${fmt(x, 2)}× @${conns[i]}`).join(', ')} of it in this run, ` +
        'and a plugin adds work to (d), never removes any.',
      '',
    );
  }
  const budget = cpuBudget(get('b', 64), [
    {
      label: '0.85× the floor',
      rps: 0.85 * (get('c', 64)?.rps ?? NaN),
      against: get('p', 64),
      what: "(p)'s gateway, the protocol floor with no policy",
    },
  ]);
  if (budget) L.push(budget, '');
  if (sweep.length) L.push(sweepSection(sweep));
  if (scales.length) {
    L.push(
      '## Discovery at scale',
      '',
      `Topology as (b): the gateway with the users service (7 contracts) in its own process, plus one process announcing synthetic CRUD contracts (Create/Get/Update/List per resource \`Asset<n>\`) over the plugin's SDK, as services of 200 contracts each (one announcement of 1,000 would exceed the default announcementMaxBytes). ` +
        `"10 contracts" = 7 + 3 synthetic; "1,000 contracts" = 7 + ${OPTS.scaleContracts} synthetic. ` +
        'Synthetic paths sort before `/api/users`, so with one apiEndpoint per route the measured route is matched after all of them (worst case for the host, which tries routes in order). ' +
        '`routing: endpoints` writes one apiEndpoint per route; `routing: table` (`CONTRACT_ROUTING=table`) writes one for all of them and matches the path in the plugin (plugin/routing/path-table.ts); `routing: auto` (the default) is endpoints up to 50 routes and the table above, so endpoints with 10 contracts and the table with 1,000. ' +
        `${OPTS.scaleRounds} round(s) × ${OPTS.scaleDurationS} s at 64 connections, 10 and 1,000 alternated.`,
      '',
      '| routing | contracts | generated endpoints | req/s | p50 ms | p99 ms | errors | gateway RSS MB (peak) |',
      '|---|---|---:|---:|---:|---:|---:|---:|',
    );
    for (const sc of scales) {
      L.push(
        `| ${sc.routing} | 10 | ${sc.endpointsSmall} | ${fmt(sc.small.rps)} | ${fmt(sc.small.p50, 1)} | ${fmt(sc.small.p99, 1)} | ${sc.small.errors} | ${fmt(sc.small.rss)} |`,
        `| ${sc.routing} | 1,000 | ${sc.endpointsLarge} | ${fmt(sc.large.rps)} | ${fmt(sc.large.p50, 1)} | ${fmt(sc.large.p99, 1)} | ${sc.large.errors} | ${fmt(sc.large.rss)} |`,
      );
    }
    L.push('');
    for (const sc of scales) {
      L.push(
        `- routing: ${sc.routing}: 1,000 contracts announced → all routed: ${sc.liveAfterMs.map((x) => `${x} ms`).join(', ')}; ` +
          `a new contract announced with ${sc.contracts - 1} known → first 2xx on its route: ${sc.firstOkMs} ms (timed from just before the service starts, which includes declaring its queue); ` +
          `gateway RSS with ${sc.contracts} contracts, idle after the load: ${fmt(sc.rssIdle)} MB.`,
      );
    }
    L.push('');
  }
  L.push(
    '## Reproduce',
    '',
    '```sh',
    'npm run build && npm run bench          # full run (RabbitMQ on 127.0.0.1:5672, guest/guest; installs bench/ deps on first use)',
    'npm run bench -- --quick                 # < 2 minutes, for development',
    'npm run bench -- --before=<git ref>      # adds (B): that commit built in a temporary git worktree, beside (b)',
    'npm run bench -- --only=b,c --profile=b,c --rounds=1 --connections=64 --skip-scale  # CPU profiles of the measured runs in bench/profiles/',
    'node bench/profile-summary.mjs bench/profiles/<b>.cpuprofile --requests=N --against=bench/profiles/<c>.cpuprofile --against-requests=M  # per request, (b) minus (c)',
    "npm run bench:pipeline                   # the plugin's own steps alone: CPU µs per request, in process",
    "npm run bench:pipeline -- --shapes       # the same work in fewer host steps (issue 37 item 6's prototype), paired",
    'npm run bench -- --only=b,m --connections=64 --skip-scale --skip-sweep  # (m): generated pipelines of one plugin step, over HTTP',
    'npm run bench -- --only=none --skip-scale --sweep=1000,10000,100000,1000000  # the reply-size sweep alone',
    "node bench/request-path.mjs --against=<other build's dist>  # pending requests, spans, output check: paired, in process",
    'node bench/embedded-memory.mjs           # what the embedded set-up (a) holds: RSS, heap, external memory',
    '```',
    '',
  );
  return L.join('\n');
}

// ------------------------------------------------------------------ main

async function main() {
  const t0 = Date.now();
  const meta = {
    runId: RUN_ID,
    date: new Date().toISOString(),
    loadBefore: loadavg()
      .map((x) => x.toFixed(2))
      .join(' '),
  };
  log(`${RUN_ID}: ${OPTS.quick ? 'quick' : 'full'} run of ${OPTS.only.join(', ')}`);
  const starters = {
    a: () => startOurGateway('a', { overRabbit: false }),
    b: () => startOurGateway('b', { overRabbit: true }),
    q: () => startOurGateway('q', { overRabbit: true, queueType: 'quorum' }),
    o: () => startOurGateway('o', { overRabbit: true, observe: 'all' }),
    B: () => startOurGateway('B', { overRabbit: true, root: beforeTree.dir }),
    m: () => startOurGateway('m', { overRabbit: true, oneStep: true }),
    y: () => onOtherNode(() => startOurGateway('y', { overRabbit: true })),
    z: () => onOtherNode(() => startBareEg('z', 'rpc')),
    g: () => startOurGateway('g', { overRabbit: true, routing: 'table' }),
    l: () => startList('l'),
    k: () => startBareEg('k', 'rpc', LIST_BYTES),
    w: () => startCreate('w'),
    h: () => startOurGateway('h', { overRabbit: true, routerOnly: true }),
    c: () => startBareEg('c', 'rpc'),
    p: () => startBareEg('p', 'protocol'),
    d: () => startBareEg('d', 'direct'),
    e: () => startMoleculer('e'),
    f: () => startBus('f'),
  };
  if (OPTS.before) {
    await buildBefore(OPTS.before);
    NAMES.B = `(B) (b) before: ${beforeTree.sha}`;
  }
  const targets = [];
  for (const k of OPTS.only) {
    targets.push(await starters[k]());
    log(`started ${NAMES[k]}`);
  }
  for (const t of targets) {
    if (t.bus) continue;
    await warmUp(t, OPTS.warmupRequests);
    log(`warmed up ${t.key}`);
  }
  const samples = {};
  for (let round = 0; round < OPTS.rounds; round++) {
    for (const c of OPTS.connections) {
      // Rotate the order each round so no configuration always runs right after the same neighbour.
      const order = targets.map((_, i) => targets[(i + round) % targets.length]);
      for (const t of order) {
        const r = t.bus ? await measureBus(t, c, OPTS.durationS) : await measureHttp(t, c, OPTS.durationS);
        ((samples[t.key] ??= {})[c] ??= []).push(r);
        log(
          `round ${round + 1} ${t.key} @${c}: ${r.rps.toFixed(0)}/s p50 ${fmt(r.p50, 1)} p99 ${fmt(r.p99, 1)} errors ${r.errors} cpu µs/req gw ${fmt(r.cpuPerReq)} (gc ${fmt(r.gcPerReq)}) svc ${fmt(r.serviceCpuPerReq)} broker ${fmt(r.brokerCpuPerReq)}`,
        );
      }
    }
  }
  const results = {};
  for (const [k, byConn] of Object.entries(samples))
    for (const [c, list] of Object.entries(byConn)) (results[k] ??= {})[c] = summarise(list);
  for (const t of targets) for (const p of [...t.procs].reverse()) await stopChild(p.child);
  const sweep = OPTS.skipSweep || !OPTS.sweep.length ? [] : await sizeSweep();
  const scales = [];
  if (!OPTS.skipScale) for (const routing of OPTS.scaleRouting) scales.push(await scaleBenchmark(routing));
  meta.loadAfter = loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
  meta.wallS = (Date.now() - t0) / 1000;
  writeFileSync(OPTS.report, report(results, scales, meta, sweep));
  log(`report written to ${OPTS.report} (${meta.wallS.toFixed(0)} s)`);
}

main()
  .catch((err) => {
    console.error(`[bench] failed: ${err.stack ?? err}`);
    process.exitCode = 1;
  })
  .finally(() => cleanup());
