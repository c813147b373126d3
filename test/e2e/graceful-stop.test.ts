import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { Agent, request as httpRequest } from 'node:http';
import { join, resolve } from 'node:path';
import { startGateway, eventually, type GatewayProcess } from '../support/gateway-process';
import { AMQP_URL, uniquePrefix } from '../support/env';
import { http } from '../support/http';
import { RawConnection } from '../support/raw-http';
import { killUnready } from '../support/service-process';

const ROOT = resolve(__dirname, '..', '..', '..');

interface ServiceProcess {
  child: ChildProcess;
  exited: Promise<number | null>;
  output(): string;
}

/** The nap service (test/support/nap-service.ts) as its own process on the gateway's bus prefix. */
async function startNapService(prefix: string, env: Record<string, string> = {}): Promise<ServiceProcess> {
  let out = '';
  const child = spawn(process.execPath, [join(ROOT, 'dist', 'test', 'support', 'nap-service.js')], {
    env: { ...process.env, BUS_URL: AMQP_URL, BUS_PREFIX: prefix, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  await eventually(async () => {
    if (child.exitCode !== null) throw new Error(`nap service exited:\n${out}`);
    if (!out.includes('ready')) throw new Error('not ready');
  }, 15000).catch((err: unknown) => killUnready(child, exited, err));
  return { child, exited, output: () => out };
}

function exitOf(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((r) => child.once('exit', (code) => r(code)));
}

function portOf(gw: GatewayProcess): number {
  return Number(new URL(gw.baseUrl).port);
}

/** `reused`: the request went out on a keep-alive connection that had already carried an answer. */
type Outcome = { status: number; connection?: string } | { error: string; reused: boolean };

/** One POST /api/naps on a keep-alive agent: its HTTP answer, or the socket error that replaced it. */
function napOn(agent: Agent, port: number): Promise<Outcome> {
  return new Promise((resolve) => {
    const body = JSON.stringify({ ms: 0 });
    const req = httpRequest(
      {
        agent,
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/api/naps',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection }));
        res.on('error', (err: NodeJS.ErrnoException) =>
          resolve({ error: err.code ?? err.message, reused: req.reusedSocket }),
        );
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) =>
      resolve({ error: err.code ?? err.message, reused: req.reusedSocket }),
    );
    req.end(body);
  });
}

describe('graceful stop (real processes, RabbitMQ)', function () {
  this.timeout(60000);
  let gw: GatewayProcess | undefined;
  let svc: ServiceProcess | undefined;
  const conns: RawConnection[] = [];

  async function setUp(gatewayEnv: Record<string, string>): Promise<void> {
    const prefix = uniquePrefix('stop');
    gw = await startGateway({
      BUS_URL: AMQP_URL,
      BUS_PREFIX: prefix,
      START_REFERENCE_SERVICES: 'false',
      // /api/naps is public: the per-address limit on public routes would answer the load 429 (not what is tested).
      PUBLIC_RATE_LIMIT_MAX: 'off',
      ...gatewayEnv,
    });
    svc = await startNapService(prefix);
    await eventually(async () => {
      const r = await http('POST', `${gw!.baseUrl}/api/naps`, { body: { ms: 0 } });
      if (r.status !== 201) throw new Error(`route not ready: ${r.status}`);
    }, 15000);
  }

  afterEach(async () => {
    for (const c of conns.splice(0)) c.destroy();
    if (svc && svc.child.exitCode === null) {
      svc.child.kill('SIGKILL');
      await svc.exited;
    }
    svc = undefined;
    await gw?.stop();
    gw = undefined;
  });

  it('SIGTERM: a request in flight finishes, one arriving on an open connection gets 503 + Retry-After, new connections are refused, exit 0', async () => {
    await setUp({ SHUTDOWN_GRACE_MS: '10000' });
    const conn = await RawConnection.open(portOf(gw!));
    conns.push(conn);
    conn.send('POST', '/api/naps', { ms: 2000 });
    await new Promise((r) => setTimeout(r, 400));
    gw!.child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 400));
    conn.send('POST', '/api/naps', { ms: 0 });

    const first = await conn.next();
    expect(first.status, first.body).to.equal(201);
    expect(JSON.parse(first.body)).to.include({ slept: 2000 });
    const second = await conn.next();
    expect(second.status).to.equal(503);
    expect(second.headers['retry-after']).to.match(/^\d+$/);
    expect(JSON.parse(second.body)).to.include({ code: 'SERVICE_UNAVAILABLE' });

    const refused = await fetch(`${gw!.baseUrl}/api/naps`, { method: 'POST' }).then(
      () => 'answered',
      () => 'refused',
    );
    expect(refused).to.equal('refused');
    expect(await exitOf(gw!.child)).to.equal(0);
  });

  it('SIGTERM under keep-alive load: every request sent on an open connection gets an HTTP answer, none a reset', async () => {
    await setUp({ SHUTDOWN_GRACE_MS: '10000' });
    const port = portOf(gw!);
    const agent = new Agent({ keepAlive: true, maxSockets: 64 });
    const exited = exitOf(gw!.child);
    let gone = false;
    void exited.then(() => (gone = true));
    const outcomes: Outcome[] = [];
    let answered = 0;
    // Clients that keep their connections busy, as a load generator does, until the gateway process is gone.
    const worker = async (): Promise<void> => {
      while (!gone) {
        const outcome = await napOn(agent, port);
        outcomes.push(outcome);
        if ('status' in outcome) answered++;
        // A new connection fails once the listener is closed: back off instead of spinning.
        else await new Promise((r) => setTimeout(r, 20));
      }
    };
    const workers = Array.from({ length: 64 }, worker);
    await eventually(
      async () => {
        if (answered < 200) throw new Error(`load not started: ${answered} answers`);
      },
      15000,
      50,
    );
    gw!.child.kill('SIGTERM');
    expect(await exited).to.equal(0);
    await Promise.all(workers);
    agent.destroy();

    // A new connection racing the listener's close can be refused or reset by the kernel (that is the load
    // balancer's part); a request on an open keep-alive connection must get an answer.
    const lost = outcomes.filter((o) => 'error' in o && o.reused);
    expect(lost, `requests sent on open connections that got no answer: ${JSON.stringify(lost)}`).to.deep.equal([]);
    const answers = outcomes.filter((o): o is { status: number; connection?: string } => 'status' in o);
    for (const a of answers) expect([201, 503]).to.include(a.status);
    // The drain's answers tell the clients not to reuse their connections.
    expect(answers.filter((a) => a.connection === 'close').length).to.be.above(0);
  });

  it('SIGTERM: what is still waiting when the grace period ends is answered 503 with Retry-After, then the process exits 0', async () => {
    await setUp({ SHUTDOWN_GRACE_MS: '500' });
    const pending = http('POST', `${gw!.baseUrl}/api/naps`, { body: { ms: 8000 } });
    await new Promise((r) => setTimeout(r, 300));
    const sent = Date.now();
    gw!.child.kill('SIGTERM');
    const res = await pending;
    expect(res.status).to.equal(503);
    expect(res.headers.get('retry-after')).to.match(/^\d+$/);
    expect(res.body).to.include({ code: 'SERVICE_UNAVAILABLE' });
    expect(res.body.correlationId).to.be.a('string');
    // Generous "fails fast" bound: answered at the grace period, not when the service finally replies.
    expect(Date.now() - sent).to.be.below(6000);
    expect(await exitOf(gw!.child)).to.equal(0);
  });

  it("a service's SIGTERM withdraws its contracts: the gateway stops routing to it while it finishes what it has, then it exits 0", async () => {
    await setUp({});
    const inFlight = http('POST', `${gw!.baseUrl}/api/naps`, { body: { ms: 2500 } });
    await new Promise((r) => setTimeout(r, 400));
    svc!.child.kill('SIGTERM');

    await eventually(
      async () => {
        const r = await http('POST', `${gw!.baseUrl}/api/naps`, { body: { ms: 0 } });
        if (r.status !== 404) throw new Error(`still routed: ${r.status}`);
      },
      2000,
      50,
    );
    // Not routed any more, while the service process is still there finishing its request.
    expect(svc!.child.exitCode).to.equal(null);

    const done = await inFlight;
    expect(done.status).to.equal(201);
    expect(await svc!.exited).to.equal(0);
    expect(svc!.output()).to.include('withdrawing nap-service');
  });
});
