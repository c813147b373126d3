#!/usr/bin/env node
/**
 * `npm run bench:quorum`: what a quorum work queue costs against a classic one, on the bus alone (no HTTP): the
 * product's AMQP transport as gateway and as service, N requests in flight for D seconds, classic and quorum
 * alternated round by round, median req/s of the rounds. A smaller, targeted run than `npm run bench`'s row (q).
 *
 * Flags: --rounds=N (default 3), --duration=S (default 5), --concurrency=N (default 64), --cluster (start three
 * RabbitMQ nodes of its own, as test/e2e/cluster.test.ts does, and measure there; needs rabbitmq-server).
 * Env: BENCH_AMQP_URL (default amqp://guest:guest@127.0.0.1:5672; several, comma-separated, for a cluster of yours).
 */
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(join(ROOT, 'package.json'));
const { AmqpTransport } = require('./dist/plugin/bus/amqp/index.js');
const { deleteBusTopology, deleteWorkQueues } = require('./dist/test/support/broker.js');

const argv = process.argv.slice(2);
const option = (name, fallback) => Number(argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
const ROUNDS = option('rounds', 3);
const DURATION_MS = option('duration', 5) * 1000;
const CONCURRENCY = option('concurrency', 64);
const quiet = { info() {}, warn() {}, error() {} };
const log = (m) => console.log(`[quorum-cost ${new Date().toISOString().slice(11, 19)}] ${m}`);

/** One round: a fresh prefix, a service on `queueType` work queues, CONCURRENCY callers for DURATION_MS. */
async function round(busUrl, queueType) {
  const prefix = `bench-q-${randomBytes(4).toString('hex')}`;
  const gateway = new AmqpTransport(busUrl, { prefix, logger: quiet });
  const service = new AmqpTransport(busUrl, { prefix, logger: quiet, queueType });
  try {
    await Promise.all([gateway.start(), service.start()]);
    await service.serve('echo', async (m) => ({ ok: true, result: m.input }), { prefetch: 16 });
    const request = {
      messageType: 'EchoQuery',
      targetService: 'echo',
      input: { id: 'u-1', name: 'a user' },
      headers: { correlationId: 'c', requestId: 'r' },
    };
    // Warm-up, then the measured window.
    for (let i = 0; i < 500; i++) await gateway.request(request, 5000);
    let done = 0;
    let failed = 0;
    const until = Date.now() + DURATION_MS;
    const started = Date.now();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (Date.now() < until) {
          await gateway.request(request, 5000).then(
            () => done++,
            () => failed++,
          );
        }
      }),
    );
    return { rps: done / ((Date.now() - started) / 1000), failed };
  } finally {
    await service.close();
    await gateway.close();
    const first = busUrl.split(',')[0];
    await deleteWorkQueues(first, prefix, ['echo']).catch(() => undefined);
    await deleteBusTopology(first, prefix).catch(() => undefined);
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function measure(busUrl, where) {
  const results = { classic: [], quorum: [] };
  for (let r = 0; r < ROUNDS; r++) {
    // Alternated, and the order swapped each round, so a change in the machine's load falls on both.
    const order = r % 2 === 0 ? ['classic', 'quorum'] : ['quorum', 'classic'];
    for (const type of order) {
      const { rps, failed } = await round(busUrl, type);
      results[type].push(rps);
      log(`${where}, round ${r + 1}, ${type}: ${rps.toFixed(0)} req/s${failed ? `, ${failed} failed` : ''}`);
    }
  }
  const classic = median(results.classic);
  const quorum = median(results.quorum);
  log(
    `${where}: classic ${classic.toFixed(0)} req/s, quorum ${quorum.toFixed(0)} req/s (median of ${ROUNDS}), quorum / classic ${(quorum / classic).toFixed(2)}`,
  );
}

async function main() {
  if (!argv.includes('--cluster')) {
    await measure(process.env.BENCH_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672', 'broker');
    return;
  }
  const { RabbitCluster, rabbitmqBin } = require('./dist/test/support/rabbitmq-cluster.js');
  const bin = rabbitmqBin();
  if (!bin) throw new Error('--cluster needs rabbitmq-server');
  log('starting three RabbitMQ nodes');
  const cluster = await RabbitCluster.start(bin);
  try {
    await measure(cluster.busUrl(), 'three-node cluster');
  } finally {
    await cluster.stop();
  }
}

main().catch((err) => {
  console.error(`[quorum-cost] failed: ${err.stack ?? err}`);
  process.exitCode = 1;
});
