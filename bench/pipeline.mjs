#!/usr/bin/env node
/**
 * What the plugin's own steps cost per request, without sockets and without a broker, so that less of the machine's
 * noise gets into the figure: `npm run bench:pipeline` (after `npm run build`).
 *
 * Two loops over the same in-process bus and the same reference users service (GET of one user):
 * - "pipeline": request-trace ▸ contract-rate-limit ▸ jwt-dev-auth ▸ permission ▸ schema-validation ▸
 *   contract-router, the policies of a generated route as the host builds them (a cached HS256 token with
 *   users:read, the route given by the endpoint's `contract:` as on a generated apiEndpoint); the host's `cors`
 *   step is not ours and not in the loop.
 * - "bare": the least a policy can do with the bus: one request, the result written as JSON.
 * Requests run 64 at a time, like the HTTP benchmark's middle concurrency. Reported: CPU µs per request of each
 * loop, and what our steps add: the median of the rounds' differences (31 short rounds of each loop, alternated).
 * `--shapes` (issue 37 item 6) adds two loops doing the pipeline's work in fewer host steps, with the bench-only
 * prototype of bench/lib/one-step.cjs (the policies' own steps in one runner):
 * - "endpoint": request-trace ▸ contract-rate-limit ▸ contract-endpoint (jwt-dev-auth, permission,
 *   schema-validation and contract-router in one host step), the shape the issue proposes;
 * - "one": all of it in one host step (the runner sets the trace ids), the most that merging steps can save;
 * and reports what each saves against "pipeline": the median of the rounds' paired differences, with their range.
 * Both loops go through a real Express app built as the host builds one (its request and response prototypes, a
 * `mergeParams` router per pipeline with one layer per step, `egContext` made as the host makes it) with real
 * IncomingMessage / ServerResponse objects and no socket. The objects matter: Express re-prototypes each of them, so
 * each ends up with a hidden class of its own, and a property added to one, or read from it, costs far more than on
 * a plain object (a plain stand-in hid that).
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const dist = (p) => require(join(ROOT, 'dist', p));

const SECRET = 'bench-pipeline-secret-0123456789abcdef0123456789';
process.env.JWT_SECRET = SECRET;
process.env.DEVELOPMENT_AUTH_ENABLED = 'false';

const { resolveSettings } = dist('plugin/settings/index.js');
const { Runtime } = dist('plugin/runtime.js');
const { createTransport } = dist('plugin/bus/index.js');
const { startUsersService } = dist('examples/users-service/index.js');
const { UserStore } = dist('examples/users-service/store.js');
const { openDatabase } = dist('examples/storage/index.js');
const { requestTracePolicy } = dist('policies/request-trace/index.js');
const { contractRateLimitPolicy } = dist('policies/contract-rate-limit/index.js');
const { jwtDevAuthPolicy } = dist('policies/jwt-dev-auth/index.js');
const { permissionPolicy } = dist('policies/permission/index.js');
const { schemaValidationPolicy } = dist('policies/schema-validation/index.js');
const { contractRouterPolicy } = dist('policies/contract-router/index.js');

const arg = (name, fallback) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
const ROUNDS = arg('rounds', 31);
const SHAPES = process.argv.includes('--shapes');
const REQUESTS = arg('requests', 8000);
const CONCURRENCY = 64;

const b64 = (v) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');
function hs256(claims) {
  const head = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64(claims)}`;
  return `${head}.${createHmac('sha256', SECRET).update(head).digest('base64url')}`;
}

const quiet = { debug() {}, info() {}, warn: (m) => console.warn(m), error: (m) => console.error(m) };
// The authentication settings are the runtime's, read from the environment it is given.
const runtime = new Runtime(
  resolveSettings(
    { busUrl: 'embedded', writeConfig: false },
    { JWT_SECRET: SECRET, DEVELOPMENT_AUTH_ENABLED: 'false' },
  ),
  quiet,
);
await runtime.start();
const transport = createTransport({ url: 'embedded', prefix: runtime.settings.busPrefix });
await transport.start();
// The users service on the embedded database, in a directory of its own removed at the end.
const dataDir = mkdtempSync(join(tmpdir(), 'bench-pipeline-'));
const db = await openDatabase({ dataDir });
const users = await startUsersService(transport, { store: new UserStore(db), bcryptRounds: 4 });
// What a request uses (the runtime's RequestServices part): the policies get it, as createPolicies gives it.
const services = runtime.services;
for (let i = 0; i < 200 && !services.contract('GetUserQuery'); i++) await new Promise((r) => setTimeout(r, 10));
const created = await services.transport.request(
  {
    messageType: 'CreateUserCommand',
    targetService: 'users-service',
    input: { email: 'bench@example.com', firstName: 'Bench', lastName: 'Mark', password: 'long-enough-1' },
    headers: { correlationId: 'seed', requestId: 'seed' },
  },
  5000,
);
if (!created.ok) throw new Error(`seed failed: ${JSON.stringify(created.error)}`);
const userId = created.result.userId;
const authorization = `Bearer ${hs256({ sub: 'bench', permissions: ['users:read'], exp: Math.floor(Date.now() / 1000) + 3600 })}`;

// As the host calls them: one instance per step, each with its step's action (empty on a generated pipeline).
const policies = [
  requestTracePolicy,
  contractRateLimitPolicy,
  jwtDevAuthPolicy,
  permissionPolicy,
  schemaValidationPolicy,
  contractRouterPolicy,
].map((p) => p(services));
const steps = policies.map((p) => p.policy({}));
// --shapes: the same work in fewer host steps (bench/lib/one-step.cjs, a prototype only the benchmark uses).
const { oneStep } = require('./lib/one-step.cjs');
const endpointSteps = [steps[0], steps[1], oneStep(join(ROOT, 'dist'), policies.slice(2))];
const oneSteps = [oneStep(join(ROOT, 'dist'), policies.slice(1))];
const endpoint = { contract: { messageType: 'GetUserQuery' } };

/** The least a policy can do with the bus: one request, the result written as JSON. */
function bareStep(req, res) {
  services.transport
    .request(
      {
        messageType: 'GetUserQuery',
        targetService: 'users-service',
        input: { userId: req.params.userId },
        headers: { correlationId: 'c', requestId: 'r' },
      },
      30000,
    )
    .then((reply) => {
      res.setHeader('Content-Type', 'application/json; charset=utf-8');
      res.end(JSON.stringify(reply.result));
    });
}

// The host's app (express-gateway lib/gateway): x-powered-by off, one route per apiEndpoint path whose handler
// makes req.egContext and runs the pipeline's router, a mergeParams router with one layer per policy step.
const express = require(require.resolve('express', { paths: [ROOT] }));
const EgContextBase = require(require.resolve('express-gateway/lib/gateway/context', { paths: [ROOT] }));
const app = express();
app.set('x-powered-by', false);
function pipelineRouter(stepFns) {
  const router = express.Router({ mergeParams: true });
  router.use(stepFns.map((step) => (req, res, next) => step(req, res, next)));
  return router;
}
for (const [path, router] of [
  ['/pipeline/users/:userId', pipelineRouter(steps)],
  ['/endpoint/users/:userId', pipelineRouter(endpointSteps)],
  ['/one/users/:userId', pipelineRouter(oneSteps)],
  ['/bare/users/:userId', pipelineRouter([bareStep])],
]) {
  app.get(path, (req, res, next) => {
    req.egContext = Object.create(new EgContextBase());
    req.egContext.req = req;
    req.egContext.res = res;
    req.egContext.apiEndpoint = endpoint;
    return router(req, res, next);
  });
}

/**
 * How a loop learns that a response ended: Express gives every response the app's prototype, so the hook lives there,
 * and the callbacks wait in a WeakMap (nothing is added to the response itself).
 */
const finished = new WeakMap();
app.response.end = function end(body) {
  const out = ServerResponse.prototype.end.call(this, body);
  finished.get(this)?.(this.statusCode, body);
  return out;
};

function run(loop, done, headers = { authorization, host: 'bench' }) {
  const req = new IncomingMessage(new Socket());
  req.method = 'GET';
  req.url = `/${loop}/users/${userId}`;
  req.headers = headers;
  const res = new ServerResponse(req);
  finished.set(res, (status, body) => done(status, body, res));
  app(req, res);
}
const loops = {
  pipeline: (done) => run('pipeline', done),
  bare: (done) => run('bare', done),
  ...(SHAPES ? { endpoint: (done) => run('endpoint', done), one: (done) => run('one', done) } : {}),
};

async function drive(run, total) {
  let started = 0;
  let failures = 0;
  await new Promise((resolve) => {
    let finished = 0;
    const one = () => {
      started++;
      run((status) => {
        if (status !== 200) failures++;
        if (++finished === total) resolve();
        else if (started < total) one();
      });
    };
    for (let k = 0; k < CONCURRENCY; k++) one();
  });
  if (failures) throw new Error(`${failures} of ${total} requests did not answer 200`);
}

async function measure(run) {
  const before = process.cpuUsage();
  await drive(run, REQUESTS);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / REQUESTS;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const names = Object.keys(loops);
// The shapes do the same work: the trace ids on every answer, the same user, 401 without a token, 403 without users:read.
if (SHAPES) {
  const answer = (loop, headers) => new Promise((resolve) => run(loop, (...a) => resolve(a), headers));
  const noRead = `Bearer ${hs256({ sub: 'bench', permissions: ['users:create'], exp: Math.floor(Date.now() / 1000) + 3600 })}`;
  const seen = {};
  for (const loop of ['pipeline', 'endpoint', 'one']) {
    const [ok, body, res] = await answer(loop, { authorization, host: 'bench' });
    const [anonymous] = await answer(loop, { host: 'bench' });
    const [denied] = await answer(loop, { authorization: noRead, host: 'bench' });
    seen[loop] = JSON.stringify([ok, String(body), anonymous, denied, Boolean(res.getHeader('x-request-id'))]);
  }
  if (new Set(Object.values(seen)).size !== 1 || !seen.pipeline.startsWith('[200'))
    throw new Error(`the shapes answer differently: ${JSON.stringify(seen)}`);
  console.log(`  the three shapes answer alike: ${seen.pipeline}`);
}
for (const name of names) await drive(loops[name], 20000);
const samples = Object.fromEntries(names.map((n) => [n, []]));
for (let r = 0; r < ROUNDS; r++) {
  // Each round runs every loop once, in an order rotated from round to round.
  for (let k = 0; k < names.length; k++) {
    const name = names[(r + k) % names.length];
    samples[name].push(await measure(loops[name]));
  }
}
// Each round measures the loops back to back: the difference within a round cancels the machine's slow spells,
// which move them alike, so the median of those differences is steadier than the difference of the medians.
const paired = (a, b) => {
  const d = samples[a].map((v, r) => v - samples[b][r]).sort((x, y) => x - y);
  const q = (f) => d[Math.floor((d.length - 1) * f)].toFixed(1);
  return `${median(d).toFixed(1)} µs (quartiles ${q(0.25)}–${q(0.75)}, range ${q(0)}–${q(1)})`;
};
const p = median(samples.pipeline);
const b = median(samples.bare);
console.log(`CPU per request, in process, ${ROUNDS} rounds × ${REQUESTS} requests, ${CONCURRENCY} at a time (median):`);
console.log(`  pipeline (our six steps + users service + in-process bus): ${p.toFixed(1)} µs`);
console.log(`  bare (one bus request + JSON answer, same service and bus): ${b.toFixed(1)} µs`);
console.log(`  our steps add: ${paired('pipeline', 'bare')} per request (median of the rounds' differences)`);
if (SHAPES) {
  console.log(`  endpoint (trace ▸ rate limit ▸ one step of the rest): ${median(samples.endpoint).toFixed(1)} µs`);
  console.log(`  one (everything in one host step): ${median(samples.one).toFixed(1)} µs`);
  console.log(`  endpoint saves: ${paired('pipeline', 'endpoint')} per request against pipeline (paired)`);
  console.log(`  one saves: ${paired('pipeline', 'one')} per request against pipeline (paired)`);
}
await users.stop();
await transport.close();
await db.close();
rmSync(dataDir, { recursive: true, force: true });
await runtime.stop?.();
process.exit(0);
