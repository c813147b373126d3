#!/usr/bin/env node
/**
 * What writing one access-log line costs: the plugin's own writer (plugin/logging/structured.ts, as
 * plugin/logging/access-log.ts calls it) against pino set up for the same line, with pino's `redact` option, in
 * process, to a stream that throws the lines away: `node bench/log-lines.mjs` (after `npm run build` and
 * `npm --prefix bench install`, which brings pino).
 *
 * The lines are the access lines of `GET /api/users/<id>` answered 200 (one in 50 answered 503, written at error),
 * with every field an access line carries (correlation and request ids, service, the span's ids). Both writers get
 * the same redaction the request observer applies (redact() on the path) and map the fields to the same ECS names
 * (`--format=ecs`) or pino's (`--format=json`); pino also gets its `redact` option with the paths a credential would
 * travel under (the lines have none of them, as access lines never do): its cost is what the option costs on a line
 * that has nothing to hide. "pino, no redact option" is the same without it.
 *
 * Checked before measuring: each writer's line parses to the same object as the plugin's (its time aside); the order
 * of the keys is reported, as pino writes the level first and the message last.
 *
 * `--write-only=<writer>` writes `--lines` lines with that writer alone and measures nothing, for timing the whole
 * process from outside (`/usr/bin/time -v node bench/log-lines.mjs --write-only=structured.ts --lines=1000000`).
 *
 * Reported per line: CPU ns (process.cpuUsage over `--lines` lines, `--rounds` rounds alternated, the median) and
 * bytes allocated (V8's sampling heap profiler over `--lines` lines, objects freed by a GC included).
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Session } from 'node:inspector/promises';
import { isDeepStrictEqual } from 'node:util';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const { structuredLine, ECS_VERSION } = require(join(ROOT, 'dist', 'plugin', 'logging', 'structured.js'));
const { redact } = require(join(ROOT, 'dist', 'plugin', 'logging', 'redact.js'));
const pino = createRequire(join(ROOT, 'bench', 'package.json'))('pino');

const arg = (name, fallback) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback;
const LINES = Number(arg('lines', 100_000));
const ROUNDS = Number(arg('rounds', 15));
const FORMAT = arg('format', 'ecs');
const ONLY = arg('only', '');

/** Where every writer's lines go: counted, then dropped. */
let bytes = 0;
const sink = {
  write(line) {
    bytes += line.length;
    return true;
  },
};

/** The fields of line `i`, as the request observer hands them to the access log (plugin/observability/request-observer.ts). */
function accessFields(i) {
  const status = i % 50 === 49 ? 503 : 200;
  return {
    method: 'GET',
    route: '/api/users/:userId',
    path: redact(`/api/users/u-${i % 1000}`),
    status,
    duration: 3.1 + (i % 7) / 10,
    correlationId: '5f0c6a4e-2b51-4d4e-9a57-1c0e6f0d9a11',
    requestId: '0b4f2d51-7c1e-4a9a-8e36-61a5d9f0e2c7',
    service: 'users-service',
    traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
    spanId: '00f067aa0ba902b7',
  };
}

/** The access line's message and level (plugin/logging/access-log.ts). */
const messageOf = (f) => `${f.method} ${f.route} ${f.status}`;
const levelOf = (f) => (f.status >= 500 ? 'error' : 'info');

/** The fields under their ECS names, as structured.ts's ecsLine maps them. */
function ecsFields({ method, path, status, duration, traceId, spanId, ...rest }) {
  return {
    'http.request.method': method,
    'url.path': path,
    'http.response.status_code': status,
    'event.duration': Math.round(duration * 1e6),
    ...rest,
    'trace.id': traceId,
    'span.id': spanId,
  };
}

/** The fields under pino's names, as structured.ts's pinoLine maps them. */
function jsonFields({ traceId, spanId, ...rest }) {
  return { ...rest, trace_id: traceId, span_id: spanId };
}

/** The paths pino's redact option blanks: where a credential would travel in a logged object. */
const REDACT_PATHS = ['authorization', 'password', 'token', 'accessToken', 'refreshToken', 'apiKey', 'secret'];

function pinoFor(format, withRedact) {
  const redactOption = withRedact ? { redact: { paths: REDACT_PATHS, censor: '[redacted]' } } : {};
  if (format === 'ecs') {
    return pino(
      {
        base: { 'ecs.version': ECS_VERSION, 'log.logger': 'contracts' },
        messageKey: 'message',
        timestamp: () => `,"@timestamp":"${new Date().toISOString()}"`,
        formatters: { level: (label) => ({ 'log.level': label }) },
        ...redactOption,
      },
      sink,
    );
  }
  return pino({ base: { name: 'contracts' }, ...redactOption }, sink);
}

function writers(format) {
  const mapped = format === 'ecs' ? ecsFields : jsonFields;
  const pinoWriter = (logger) => (i) => {
    const f = accessFields(i);
    logger[levelOf(f)](mapped(f), messageOf(f));
  };
  return {
    'structured.ts': (i) => {
      const f = accessFields(i);
      sink.write(`${structuredLine(format, levelOf(f), messageOf(f), f)}\n`);
    },
    'pino, redact option': pinoWriter(pinoFor(format, true)),
    'pino, no redact option': pinoWriter(pinoFor(format, false)),
  };
}

/** The line a writer writes for line `i`. */
function lineOf(write, i) {
  const before = sink.write;
  let line = '';
  sink.write = (s) => {
    line += s;
    return true;
  };
  try {
    write(i);
  } finally {
    sink.write = before;
  }
  return line;
}

const TIME_KEYS = ['@timestamp', 'time'];
function withoutTime(line) {
  const parsed = JSON.parse(line);
  for (const key of TIME_KEYS) delete parsed[key];
  return parsed;
}

function cpuNsPerLine(write) {
  const start = process.cpuUsage();
  for (let i = 0; i < LINES; i++) write(i);
  const used = process.cpuUsage(start);
  return ((used.user + used.system) * 1000) / LINES;
}

async function bytesPerLine(session, write) {
  await session.post('HeapProfiler.startSampling', {
    samplingInterval: 256,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  for (let i = 0; i < LINES; i++) write(i);
  const { profile } = await session.post('HeapProfiler.stopSampling');
  let total = 0;
  const walk = (node) => {
    total += node.selfSize;
    for (const child of node.children) walk(child);
  };
  walk(profile.head);
  return total / LINES;
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

async function main() {
  const all = writers(FORMAT);
  const alone = arg('write-only', '');
  if (alone) {
    // One writer, `--lines` lines and nothing else: for timing the whole process from outside (/usr/bin/time -v).
    const write = all[alone];
    if (!write) throw new Error(`--write-only: one of ${Object.keys(all).join(', ')}`);
    for (let i = 0; i < LINES; i++) write(i);
    return;
  }
  const names = Object.keys(all).filter((name) => !ONLY || name.startsWith(ONLY));
  const reference = lineOf(all['structured.ts'], 49);
  for (const name of names) {
    for (const i of [0, 49]) {
      const line = lineOf(all[name], i);
      const same = isDeepStrictEqual(withoutTime(line), withoutTime(lineOf(all['structured.ts'], i)));
      if (!same) throw new Error(`${name} writes another line than structured.ts:\n${line}\n${reference}`);
    }
    console.log(`${name}: ${lineOf(all[name], 49).trim()}`);
  }
  // Warm-up: every writer optimised before any round counts.
  for (const name of names) cpuNsPerLine(all[name]);
  const cpu = Object.fromEntries(names.map((n) => [n, []]));
  for (let round = 0; round < ROUNDS; round++) {
    const order = names.map((_, k) => names[(k + round) % names.length]);
    for (const name of order) cpu[name].push(cpuNsPerLine(all[name]));
  }
  const session = new Session();
  session.connect();
  const allocated = {};
  for (const name of names) allocated[name] = await bytesPerLine(session, all[name]);
  session.disconnect();
  console.log(
    `\nNode ${process.version}, --format=${FORMAT}, ${LINES} lines × ${ROUNDS} rounds, pino ${pino.version}, ${bytes} bytes written`,
  );
  console.log(
    '| writer | CPU ns per line (median) | min–max of rounds | bytes allocated per line | CPU / structured.ts |',
  );
  console.log('|---|---:|---:|---:|---:|');
  const base = median(cpu['structured.ts'] ?? [NaN]);
  for (const name of names) {
    const m = median(cpu[name]);
    const spread = `${Math.round(Math.min(...cpu[name]))}–${Math.round(Math.max(...cpu[name]))}`;
    console.log(
      `| ${name} | ${Math.round(m)} | ${spread} | ${Math.round(allocated[name])} | ${(m / base).toFixed(2)} |`,
    );
  }
}

await main();
