#!/usr/bin/env node
/**
 * Paired, in-process measurement of the gateway's per-request bookkeeping, this build against another build's
 * dist/ (`--against=<dir>`, e.g. a `git worktree` of main after `npm run build`): rounds of each alternated, CPU µs
 * and GC ms per request, the median of the rounds' ratios. No sockets and no broker: what it measures is small
 * beside the whole request, and on a busy machine only a paired, in-process figure shows it.
 *
 *   node bench/request-path.mjs --against=/tmp/main/dist [--rounds=21] [--requests=20000]
 *
 * Parts: `pending` (64 requests in flight, each added and taken as a reply would: the deadline timer per request
 * or the one for all), `spans` (the server and bus spans of a request with no SDK registered), `output` (the
 * output check and serialisation of a reply of one user and of a page of 100, strictOutput off, after the
 * contract's first replies have passed), `reply` (all the gateway does with a reply's bytes up to the response
 * body's bytes: the publisher's depth scan or JSON syntax check, the decoding, the output check and serialisation;
 * one user, a page of 100 and a page of about 1 MB, strictOutput off, past the first replies).
 */
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PerformanceObserver } from 'node:perf_hooks';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const arg = (name, fallback) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback;
const AGAINST = arg('against');
if (!AGAINST) {
  console.error(
    "usage: node bench/request-path.mjs --against=<other build's dist dir> [--rounds=21] [--requests=20000] [--only=pending,spans,output,reply] [--strict]",
  );
  process.exit(2);
}
const ROUNDS = Number(arg('rounds', 21));
const REQUESTS = Number(arg('requests', 20000));
const ONLY = arg('only', 'pending,spans,output,reply').split(',');
// --strict: the output and reply parts with strictOutput on (every result parsed, checked and serialised).
const STRICT = process.argv.includes('--strict');
// --als: an AsyncLocalStorage in use, as with a tracing SDK's context manager (async hooks on every timer).
if (process.argv.includes('--als')) {
  const { AsyncLocalStorage } = await import('node:async_hooks');
  new AsyncLocalStorage().enterWith({});
}

let gcMs = 0;
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) gcMs += e.duration;
}).observe({ entryTypes: ['gc'] });

/** One build's pieces, loaded from its dist/. */
function build(dist) {
  const d = (p) => require(join(resolve(dist), p));
  return {
    pending: d('plugin/bus/pending.js'),
    busCall: d('plugin/observability/bus-call.js'),
    observer: d('plugin/observability/request-observer.js'),
    output: d('plugin/validation/output.js'),
    envelope: d('plugin/bus/envelope.js'),
    depth: d('plugin/request/json-depth.js'),
    validators: new (d('plugin/validation/validator-cache.js').ValidatorCache)(),
  };
}

/** 64 in flight: each request is added (with its deadline) and taken as its reply comes, oldest first. */
function pendingLoop(b, n) {
  const oldApi = b.pending.PendingRequests.prototype.add.length === 2 && !('fire' in new b.pending.PendingRequests());
  const pending = new b.pending.PendingRequests();
  const ids = [];
  const noop = () => undefined;
  const onDeadline = (id) => pending.take(id)?.reject(new Error('timeout'));
  let k = 0;
  return new Promise((done) => {
    const step = () => {
      for (let i = 0; i < 1000 && k < n; i++, k++) {
        const id = `p-${k}`;
        if (oldApi)
          pending.add(id, { service: 's', timer: setTimeout(onDeadline, 30000, id), resolve: noop, reject: noop });
        else pending.add(id, { service: 's', timeoutMs: 30000, resolve: noop, reject: noop });
        ids.push(id);
        if (ids.length > 64) pending.take(ids.shift())?.resolve({ ok: true });
      }
      if (k < n) setImmediate(step);
      else {
        for (const id of ids) pending.take(id);
        done();
      }
    };
    step();
  });
}

/** A request's spans with no SDK: the server span (the observer's) and the bus call's, started and ended. */
async function spansLoop(b, n) {
  const { BusCall } = b.busCall;
  const { RequestObserver } = b.observer;
  const observer = new RequestObserver();
  const res = { on: () => undefined, setHeader: () => undefined };
  for (let i = 0; i < n; i++) {
    const req = { method: 'GET', headers: {} };
    observer.observe(req, res);
    const call = new BusCall(undefined, 'users-service', 'GetUserQuery', 'amqp', undefined);
    call.traceparent.length === 1 ? call.traceparent(undefined) : call.traceparent();
    call.replied({ ok: true });
  }
}

const { benchUser } = require('./lib/user.js');
// The bench's user with two more fields (the same bytes as before benchUser was shared).
const user = (i) => ({ ...benchUser(`u-${i}`), permissions: ['users:read', 'users:write'], department: 'Engineering' });
const userSchema = {
  type: 'object',
  properties: {
    userId: { type: 'string' },
    id: { type: 'string' },
    email: { type: 'string', format: 'email' },
    firstName: { type: 'string' },
    lastName: { type: 'string' },
    name: { type: 'string' },
    role: { type: 'string' },
    createdAt: { type: 'string', format: 'date-time' },
    updatedAt: { type: 'string', format: 'date-time' },
  },
  required: ['userId', 'email'],
};
/** Frozen to the last level, as the registry's contracts are (what is frozen is remembered per object). */
const deepFreeze = (o) => {
  if (o && typeof o === 'object' && !Object.isFrozen(o)) for (const v of Object.values(Object.freeze(o))) deepFreeze(v);
  return o;
};
const contracts = {
  one: deepFreeze({
    messageType: 'GetUserQuery',
    targetService: 'users-service',
    inputSchema: { type: 'object' },
    outputSchema: userSchema,
    requiredPermissions: [],
  }),
  page: deepFreeze({
    messageType: 'ListUsersQuery',
    targetService: 'users-service',
    inputSchema: { type: 'object' },
    outputSchema: {
      type: 'object',
      properties: { items: { type: 'array', items: userSchema }, total: { type: 'integer' } },
    },
    requiredPermissions: [],
  }),
};
contracts.mb = contracts.page;
const page = (n) =>
  Buffer.from(JSON.stringify({ ok: true, result: { items: Array.from({ length: n }, (_, i) => user(i)), total: n } }));
const replies = {
  one: Buffer.from(JSON.stringify({ ok: true, result: user(1) })),
  page: page(100),
  // Just under the default maxReplyBytes (1 MiB).
  mb: page(3650),
};
const silent = { debug() {}, info() {}, warn() {}, error() {} };

/** The reply's bytes to the response body's text: decoded, checked, serialised (as each build does it). */
function outputLoop(b, n, which) {
  const context = {
    validators: b.validators,
    // Builds whose runtime owns the output sampling hand responseJson the runtime's OutputSamples.
    ...(b.output.OutputSamples ? { outputSamples: new b.output.OutputSamples() } : {}),
    log: silent,
    settings: { strictOutput: STRICT },
  };
  const contract = contracts[which];
  const bytes = replies[which];
  let len = 0;
  for (let i = 0; i < n; i++) {
    if (b.envelope.TOO_DEEP !== undefined) {
      // Builds that parse the result only when something reads it: responseJson takes a function.
      const reply = b.envelope.decodeReply(bytes);
      const body = b.output.responseJson(
        context,
        contract,
        () => reply.result ?? null,
        b.envelope.resultJsonOf(reply),
        'c',
      );
      len += typeof body === 'string' ? Buffer.from(body).length : body.length;
    } else if (b.output.responseJson) {
      const reply = b.envelope.decodeReply(bytes);
      const body = b.output.responseJson(context, contract, reply.result ?? null, b.envelope.resultJsonOf(reply), 'c');
      // What the response's write does with a string: encode it.
      len += typeof body === 'string' ? Buffer.from(body).length : body.length;
    } else {
      const reply = JSON.parse(bytes.toString('utf8'));
      len += Buffer.from(JSON.stringify(b.output.responseBody(context, contract, reply.result ?? null, 'c'))).length;
    }
  }
  return len;
}

/** The same, from the reply's bytes as the publisher gets them: its nesting check before decodeReply included. */
function replyLoop(b, n, which) {
  const scans = b.envelope.TOO_DEEP === undefined;
  let len = 0;
  for (let i = 0; i < n; i++) {
    // Builds before the syntax check scan the depth first; decodeReply checks it itself in those after.
    if (scans && b.depth.nestedDeeperThan(replies[which], 256)) throw new Error('too deep');
    len += outputLoop(b, 1, which);
  }
  return len;
}

async function measure(fn, n) {
  const gc0 = gcMs;
  const t = process.cpuUsage();
  await fn(n);
  const u = process.cpuUsage(t);
  // GC entries reach the observer asynchronously.
  await new Promise((r) => setTimeout(r, 5));
  return { cpu: (u.user + u.system) / n, gc: ((gcMs - gc0) * 1000) / n };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

const ours = build(join(ROOT, 'dist'));
const theirs = build(AGAINST);
const parts = [];
if (ONLY.includes('pending')) parts.push(['pending: 64 in flight', (b, n) => pendingLoop(b, n), REQUESTS]);
if (ONLY.includes('spans')) parts.push(['spans, no SDK', (b, n) => spansLoop(b, n), REQUESTS]);
if (ONLY.includes('output')) {
  parts.push(['output: 1 user (~300 B)', (b, n) => outputLoop(b, n, 'one'), REQUESTS]);
  parts.push(['output: page of 100 (~28 KB)', (b, n) => outputLoop(b, n, 'page'), Math.ceil(REQUESTS / 20)]);
}
if (ONLY.includes('reply')) {
  const kb = (which) => `${(replies[which].length / 1024).toFixed(replies[which].length < 10240 ? 1 : 0)} KB`;
  parts.push([`reply: 1 user (${kb('one')})`, (b, n) => replyLoop(b, n, 'one'), REQUESTS]);
  parts.push([`reply: page of 100 (${kb('page')})`, (b, n) => replyLoop(b, n, 'page'), Math.ceil(REQUESTS / 20)]);
  parts.push([
    `reply: page of 3650 (${kb('mb')})`,
    (b, n) => replyLoop(b, n, 'mb'),
    Math.max(32, Math.ceil(REQUESTS / 500)),
  ]);
}
for (const [label, fn, n] of parts) {
  // Warm both (JIT, validator compiled, the contract past its first checked replies).
  for (const b of [ours, theirs]) await measure((k) => fn(b, k), Math.max(n, 200));
  const rows = [];
  for (let r = 0; r < ROUNDS; r++) {
    const pair = r % 2 ? [theirs, ours] : [ours, theirs];
    const [a, c] = [await measure((k) => fn(pair[0], k), n), await measure((k) => fn(pair[1], k), n)];
    const [o, t] = r % 2 ? [c, a] : [a, c];
    rows.push({ o, t, ratio: o.cpu / t.cpu });
  }
  const med = (f) => median(rows.map(f));
  console.log(
    `${label}: this build ${med((x) => x.o.cpu).toFixed(3)} µs/req (GC ${med((x) => x.o.gc).toFixed(3)}), other ${med((x) => x.t.cpu).toFixed(3)} µs/req (GC ${med((x) => x.t.gc).toFixed(3)}); median of ${ROUNDS} paired ratios ${med((x) => x.ratio).toFixed(2)}`,
  );
}
process.exit(0);
