#!/usr/bin/env node
/**
 * What the quick start's embedded set-up (a) holds, and how much of it is the gateway's own: `node
 * bench/embedded-memory.mjs` (after `npm run build`). Three processes, one after the other, each with the bench's
 * `--max-old-space-size=128` and bench/lib/memory-probe.cjs:
 *   (a)  `npm start`'s gateway: embedded bus, the reference services in process (PGlite, the users database);
 *   (a0) the same gateway with START_REFERENCE_SERVICES=false: the plugin and its host, no service, no database;
 *   (d)  bare Express Gateway 1.16 (bench/eg-host), the host alone.
 * Each is read idle after start-up (3 s settled) and, for (a), again after 20,000 GETs of one user at 64 connections.
 * Prints a Markdown table: RSS (anonymous and file-backed), V8 heap used/total, external and ArrayBuffer memory.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { freePort } from './lib/free-port.mjs';
import { BENCH, ROOT, rootRequire, sleep, startNode, stopChild } from './lib/node-process.mjs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const autocannon = rootRequire('autocannon');
const { SignJWT } = rootRequire('jose');
const SECRET = 'bench-memory-secret-0123456789abcdef0123456789';
const work = mkdtempSync(join(tmpdir(), 'bench-memory-'));
let current;

async function start(label, script, env, ready) {
  const file = join(work, `${label}.json`);
  const { child } = await startNode(label, script, {
    env: { ...env, BENCH_MEMORY_FILE: file, LOG_LEVEL: 'warn', ACCESS_LOG: 'false' },
    nodeArgs: ['--require', join(BENCH, 'lib', 'memory-probe.cjs')],
    ready,
    stderrToo: true,
    timeoutMs: 60000,
    onSpawn: (c) => (current = c),
  });
  return { child, file };
}

async function read({ child, file }) {
  rmSync(file, { force: true });
  child.kill('SIGUSR2');
  for (let i = 0; i < 100; i++) {
    try {
      return JSON.parse(readFileSync(file, 'utf8'));
    } catch {
      await sleep(20);
    }
  }
  throw new Error('no memory reading');
}

async function ours(label, referenceServices) {
  const port = await freePort();
  const dir = join(work, label);
  const env = {
    PORT: String(port),
    EG_CONFIG_DIR: dir,
    DATA_DIR: join(dir, 'data'),
    BUS_URL: 'embedded',
    JWT_SECRET: SECRET,
    BUS_PREFIX: `bench-memory-${process.pid}`,
  };
  if (!referenceServices) env.START_REFERENCE_SERVICES = 'false';
  const p = await start(label, join(ROOT, 'dist', 'scripts', 'start.js'), env, 'gateway ready');
  return { ...p, base: `http://127.0.0.1:${port}` };
}

async function load(p) {
  const auth = `Bearer ${await new SignJWT({ permissions: ['users:read', 'users:create'], email: 'm@example.com', name: 'M' }).setProtectedHeader({ alg: 'HS256' }).setSubject('m').setIssuedAt().setExpirationTime('1h').sign(new TextEncoder().encode(SECRET))}`;
  for (let i = 0; i < 600; i++) {
    const r = await fetch(`${p.base}/api/users?page=1`, { headers: { authorization: auth } }).catch(() => undefined);
    if (r?.status === 200) break;
    await sleep(100);
  }
  const res = await fetch(`${p.base}/api/users`, {
    method: 'POST',
    headers: { authorization: auth, 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'mem@example.com', firstName: 'Ada', lastName: 'Lovelace' }),
  });
  const { userId } = await res.json();
  await new Promise((ok, fail) =>
    autocannon(
      { url: `${p.base}/api/users/${userId}`, headers: { authorization: auth }, connections: 64, amount: 20000 },
      (err, r) => (err ? fail(err) : ok(r)),
    ),
  );
}

const rows = [];
async function measure(label, make, { withLoad = false } = {}) {
  const p = await make();
  try {
    await sleep(3000);
    rows.push([label, 'idle', await read(p)]);
    if (withLoad) {
      await load(p);
      await sleep(1000);
      rows.push([label, 'after 20,000 GETs', await read(p)]);
    }
  } finally {
    await stopChild(p.child);
  }
}

try {
  await measure('(a) embedded, reference services (PGlite)', () => ours('a', true), { withLoad: true });
  await measure('(a0) embedded, no service', () => ours('a0', false));
  const port = await freePort();
  await measure('(d) bare Express Gateway', () =>
    start(
      'd',
      join(BENCH, 'eg-host', 'start.js'),
      { PORT: String(port), EG_CONFIG_DIR: join(work, 'd'), BENCH_MODE: 'direct' },
      'ready',
    ),
  );
  const f = (x) => x.toFixed(0);
  console.log(
    '| process | when | RSS MB | of which anonymous | file-backed | V8 heap used / total MB | external MB | of which ArrayBuffers |',
  );
  console.log('|---|---|---:|---:|---:|---:|---:|---:|');
  for (const [label, when, m] of rows)
    console.log(
      `| ${label} | ${when} | ${f(m.rss)} | ${f(m.rssAnon)} | ${f(m.rssFile)} | ${f(m.heapUsed)} / ${f(m.heapTotal)} | ${f(m.external)} | ${f(m.arrayBuffers)} |`,
    );
} finally {
  if (current && current.exitCode === null) current.kill('SIGKILL');
  rmSync(work, { recursive: true, force: true });
}
