'use strict';
/**
 * (f) the bus limit: amqplib RPC with no HTTP, `BENCH_CONCURRENCY` requests kept in flight for BENCH_DURATION_MS.
 * Prints one JSON line: { requests, errors, rps, p50, p99 } (latencies in ms).
 */
const { rpcClient } = require('../lib/rpc-client');

async function main() {
  const concurrency = Number(process.env.BENCH_CONCURRENCY);
  const durationMs = Number(process.env.BENCH_DURATION_MS);
  const client = await rpcClient(process.env.BENCH_AMQP_URL, process.env.BENCH_QUEUE);
  // A short warm-up so connection set-up and JIT are not measured.
  await Promise.all(Array.from({ length: 200 }, (_, i) => client.call({ userId: `warm-${i}` })));
  const latencies = [];
  let errors = 0;
  const started = process.hrtime.bigint();
  const until = Date.now() + durationMs;
  const worker = async (w) => {
    for (let i = 0; Date.now() < until; i++) {
      const t0 = process.hrtime.bigint();
      try {
        await client.call({ userId: `u-${w}-${i}` });
        latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
      } catch {
        errors++;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, (_, w) => worker(w)));
  const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
  latencies.sort((a, b) => a - b);
  const at = (q) =>
    latencies.length ? latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] : NaN;
  console.log(
    JSON.stringify({
      requests: latencies.length,
      errors,
      rps: latencies.length / elapsed,
      p50: at(0.5),
      p99: at(0.99),
    }),
  );
  await client.close();
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(`[bus-client] failed: ${err?.message}`);
    process.exit(1);
  },
);
