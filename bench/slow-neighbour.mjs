#!/usr/bin/env node
/**
 * `npm run bench:neighbour`: what a slow service does to another one behind the same gateway (issue 38). A gateway
 * over RabbitMQ and two services beside it (the SDK, in this process): fast-service answers at once, slow-service
 * after --slow-ms (5 s). First the fast route alone (--fast-connections, 16), then the same while --slow-connections
 * (64) clients hammer the slow route, each sending its next request as soon as it has its answer. Three cases: the
 * default maxInFlightPerService (the target: the fast route's p99 within 3x alone, no error); --shed-at (32)
 * below the slow clients, so that the slow route is shed, with clients retrying a 503 at once; and the same with
 * clients that wait its Retry-After. Reports the fast route's p50/p99 and errors alone and beside, the ratio of the
 * p99s, and the slow route's answers by status with their latencies and the gateway's shed count.
 *
 * Flags: --duration=S (each measured window, default 10), --slow-ms, --slow-connections, --fast-connections,
 * --shed-at. Env: BENCH_AMQP_URL (default amqp://guest:guest@127.0.0.1:5672).
 */
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(join(ROOT, 'package.json'));
const autocannon = require('autocannon');
const { startGateway } = require('./dist/test/support/gateway-process.js');
const { freePort, IMAGE_NODE_OPTIONS } = require('./dist/test/support/env.js');
const { AmqpTransport } = require('./dist/plugin/bus/amqp/index.js');
const { serve } = require('./dist/sdk/index.js');

const option = (name, fallback) =>
  Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
const DURATION_S = option('duration', 10);
const SLOW_MS = option('slow-ms', 5000);
const SLOW_CONNECTIONS = option('slow-connections', 64);
const FAST_CONNECTIONS = option('fast-connections', 16);
const SHED_AT = option('shed-at', 32);
const url = process.env.BENCH_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const quiet = { debug() {}, info() {}, warn() {}, error() {} };
const log = (m) => console.log(`[slow-neighbour ${new Date().toISOString().slice(11, 19)}] ${m}`);

const contract = (messageType, path) => ({
  messageType,
  public: true,
  http: { method: 'GET', paths: [path] },
  inputSchema: { type: 'object' },
  outputSchema: { type: 'object' },
  requiredPermissions: [],
  timeoutMs: SLOW_MS * 2,
});

function cannon(opts) {
  return new Promise((ok, fail) =>
    autocannon(
      { timeout: (SLOW_MS * 2) / 1000 + 5, ...(opts.amount ? {} : { duration: DURATION_S }), ...opts },
      (err, r) => (err ? fail(err) : ok(r)),
    ),
  );
}

const summary = (r) => ({
  requests: r.requests.total,
  p50: r.latency.p50,
  p99: r.latency.p99,
  errors: r.errors + r.non2xx,
  statuses: Object.fromEntries(Object.entries(r.statusCodeStats ?? {}).map(([code, s]) => [code, s.count])),
});

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? 0;

/**
 * SLOW_CONNECTIONS clients on the slow route for `durationMs`, each sending its next request as soon as it has an
 * answer; with `honour`, after waiting the Retry-After of a 503 first, as docs/operations.md asks of clients.
 */
async function slowClients(baseUrl, durationMs, honour) {
  const until = Date.now() + durationMs;
  const latencies = [];
  const statuses = {};
  await Promise.all(
    Array.from({ length: SLOW_CONNECTIONS }, async () => {
      while (Date.now() < until) {
        const started = performance.now();
        let status = 0;
        let retryAfter = 0;
        try {
          const res = await fetch(`${baseUrl}/api/slow`, { signal: AbortSignal.timeout(SLOW_MS * 3) });
          await res.text();
          status = res.status;
          retryAfter = Number(res.headers.get('retry-after') ?? 0);
        } catch {
          status = 0;
        }
        latencies.push(performance.now() - started);
        statuses[status] = (statuses[status] ?? 0) + 1;
        if (honour && status === 503) await new Promise((r) => setTimeout(r, retryAfter * 1000));
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  const errors = Object.entries(statuses).filter(([code]) => !['200', '503'].includes(code));
  return {
    requests: latencies.length,
    p50: Math.round(percentile(latencies, 50)),
    p99: Math.round(percentile(latencies, 99)),
    errors: errors.reduce((n, [, c]) => n + c, 0),
    statuses,
  };
}

async function shedCount(metricsPort) {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const m = /^contracts_gateway_service_refusals_total\{service="slow-service",reason="overload"\} (\S+)$/m.exec(text);
  return m ? Number(m[1]) : 0;
}

/**
 * One gateway with `maxInFlight` (undefined: its default); the fast route alone, then beside the slow one, whose
 * clients wait a 503's Retry-After when `honour`.
 */
async function scenario(maxInFlight, honour) {
  const metricsPort = await freePort();
  const gw = await startGateway({
    BUS_URL: url,
    START_REFERENCE_SERVICES: 'false',
    METRICS_PORT: String(metricsPort),
    ACCESS_LOG: 'false',
    // The routes are public (no token to mint): their per-address limit would answer most of the load 429.
    PUBLIC_RATE_LIMIT_MAX: 'off',
    NODE_OPTIONS: IMAGE_NODE_OPTIONS,
    ...(maxInFlight === undefined ? {} : { MAX_IN_FLIGHT_PER_SERVICE: String(maxInFlight) }),
  });
  const transport = new AmqpTransport(url, { prefix: gw.prefix, logger: quiet });
  const running = [];
  try {
    await transport.start();
    running.push(
      await serve({
        transport,
        service: 'fast-service',
        warn: () => undefined,
        operations: [{ contract: contract('GetFastQuery', '/api/fast'), handle: () => ({ fast: true }) }],
      }),
      await serve({
        transport,
        service: 'slow-service',
        prefetch: SLOW_CONNECTIONS * 2,
        operations: [
          {
            contract: contract('GetSlowQuery', '/api/slow'),
            handle: () => new Promise((r) => setTimeout(() => r({ slow: true }), SLOW_MS)),
          },
        ],
      }),
    );
    for (;;) {
      const res = await fetch(`${gw.baseUrl}/api/fast`);
      await res.text();
      if (res.status === 200) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    // Warm-up past Express Gateway's slow first requests, then the fast route alone.
    await cannon({ url: `${gw.baseUrl}/api/fast`, connections: FAST_CONNECTIONS, amount: 12_000 });
    const alone = summary(await cannon({ url: `${gw.baseUrl}/api/fast`, connections: FAST_CONNECTIONS }));
    // The slow route hammered for longer than the fast window, which starts once the slow clients are all waiting.
    const slowRun = slowClients(gw.baseUrl, (DURATION_S + 2) * 1000 + SLOW_MS, honour);
    await new Promise((r) => setTimeout(r, 1000));
    const beside = summary(await cannon({ url: `${gw.baseUrl}/api/fast`, connections: FAST_CONNECTIONS }));
    const slow = await slowRun;
    return {
      maxInFlight: maxInFlight ?? 'default (512)',
      honour,
      alone,
      beside,
      slow,
      shed: await shedCount(metricsPort),
    };
  } finally {
    for (const r of running) await r.stop().catch(() => undefined);
    await transport.close();
    await gw.stop();
  }
}

const results = [];
for (const [maxInFlight, honour] of [
  [undefined, false],
  [SHED_AT, false],
  [SHED_AT, true],
]) {
  log(`maxInFlightPerService ${maxInFlight ?? 'default'}, Retry-After ${honour ? 'honoured' : 'ignored'}…`);
  results.push(await scenario(maxInFlight, honour));
}
for (const r of results) {
  const ratio = r.beside.p99 / Math.max(1, r.alone.p99);
  r.met = ratio <= 3 && r.beside.errors === 0;
  console.log(
    `\nmaxInFlightPerService ${r.maxInFlight}, slow-service answering after ${SLOW_MS} ms, its clients ${r.honour ? 'waiting Retry-After after a 503' : 'retrying at once'}:`,
  );
  console.log(
    `  fast route alone (${FAST_CONNECTIONS} connections): ${r.alone.requests} requests, p50 ${r.alone.p50} ms, p99 ${r.alone.p99} ms, ${r.alone.errors} errors`,
  );
  console.log(
    `  fast route beside ${SLOW_CONNECTIONS} slow clients: ${r.beside.requests} requests, p50 ${r.beside.p50} ms, p99 ${r.beside.p99} ms, ${r.beside.errors} errors; p99 ${ratio.toFixed(2)}x alone (target ${r.met ? 'met' : 'NOT met'})`,
  );
  console.log(
    `  slow route: ${r.slow.requests} answers ${JSON.stringify(r.slow.statuses)}, p50 ${r.slow.p50} ms, p99 ${r.slow.p99} ms, ${r.slow.errors} errors; shed by the gateway: ${r.shed}`,
  );
}
// The target is the first case: the defaults, clients hammering the slow service.
const met = results[0]?.met === true;
console.log(met ? '\ntarget met with the defaults (fast p99 within 3x alone, no error)' : '\ntarget NOT met');
process.exitCode = met ? 0 : 1;
