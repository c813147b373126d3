#!/usr/bin/env node
/**
 * `npm run bench:flood`: a gateway (with the reference services, over RabbitMQ) under a flood of changing
 * announcements from a plain amqplib publisher, while a probe sends GET /api/users one after another.
 * Reports the probe's latencies during the flood and how long after its end the last announcement is served.
 * Targets (issue "trust on the bus"): median < 50 ms, none > 1 s, final state within 5 s.
 *
 * Flags: --rate=2000 (announcements/s), --duration=10 (s), --heap=128 (the gateway's --max-old-space-size; 0: none).
 * Env: BENCH_AMQP_URL (default amqp://guest:guest@127.0.0.1:5672).
 */
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(join(ROOT, 'package.json'));
const { startGateway } = require('./dist/test/support/gateway-process.js');
const { floodAnnouncements, probeLoop } = require('./dist/test/support/flood.js');
const { mintToken } = require('./dist/test/support/tokens.js');

const option = (name, fallback) =>
  Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
const rate = option('rate', 2000);
const durationS = option('duration', 10);
const heap = option('heap', 128);
const url = process.env.BENCH_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

const gw = await startGateway({ BUS_URL: url, ...(heap > 0 ? { NODE_OPTIONS: `--max-old-space-size=${heap}` } : {}) });
try {
  const token = await mintToken({ sub: 'bench', permissions: ['admin:all'] });
  const get = async (path) => {
    const res = await fetch(`${gw.baseUrl}${path}`, {
      headers: { authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(10_000),
    });
    const body = await res.text();
    return { status: res.status, body };
  };
  for (let i = 0; i < 200; i += 1) await get('/api/users'); // warm-up
  const quiet = probeLoop(async () => (await get('/api/users')).status);
  await new Promise((r) => setTimeout(r, 2000));
  const before = await quiet.stop();
  const probes = probeLoop(async () => (await get('/api/users')).status);
  const flood = await floodAnnouncements({ url, prefix: gw.prefix, rate, durationMs: durationS * 1000 });
  const during = await probes.stop();
  let caughtUpMs = -1;
  for (;;) {
    const listing = JSON.parse((await get('/api/discovery/contracts')).body);
    if (listing.contracts.some((c) => c.messageType === flood.lastMessageType && c.endpoints.length > 0)) {
      caughtUpMs = Date.now() - flood.endedAt;
      break;
    }
    if (Date.now() - flood.endedAt > 60_000) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const round = (n) => Math.round(n * 10) / 10;
  const line = (label, s) =>
    `${label}: ${s.count} probes, ${s.failures} not 200, median ${round(s.medianMs)} ms, p99 ${round(s.p99Ms)} ms, max ${round(s.maxMs)} ms`;
  console.log(
    `flood: ${flood.sent} changing announcements in ${durationS} s (${Math.round(flood.sent / durationS)}/s), gateway heap cap ${heap || 'none'} MB`,
  );
  console.log(line('probe GET /api/users before the flood', before));
  console.log(line('probe GET /api/users during the flood', during));
  console.log(`last announcement served ${caughtUpMs} ms after the flood ended`);
  const ok =
    during.failures === 0 && during.medianMs < 50 && during.maxMs <= 1000 && caughtUpMs >= 0 && caughtUpMs <= 5000;
  console.log(ok ? 'targets met (median < 50 ms, none > 1 s, final state within 5 s)' : 'targets NOT met');
  process.exitCode = ok ? 0 : 1;
} finally {
  await gw.stop();
}
