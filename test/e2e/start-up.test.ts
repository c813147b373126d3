import { expect } from 'chai';
import { startGateway, eventually, type GatewayProcess } from '../support/gateway-process';
import { AMQP_URL, freePort } from '../support/env';
import { http, httpAs } from '../support/http';
import { TcpProxy, viaPort } from '../support/tcp-proxy';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { spawn, type ChildProcess } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NPM_ENV, ROOT, run } from '../packaging/support';
import { TEST_JWT_SECRET } from '../support/tokens';
import { CANNOT_LISTEN_EXIT_CODE } from '../../plugin/host/listen-errors';
import { alive, liveDescendants } from '../support/leak-check';

/** `npm start` (dist/scripts/start.js) as an operator runs it, with the broker away at first. */
describe('npm start with the broker not reachable', function () {
  this.timeout(60000);
  let gw: GatewayProcess | undefined;
  let proxy: TcpProxy;

  before(async () => {
    const broker = new URL(AMQP_URL);
    proxy = new TcpProxy({ host: broker.hostname, port: Number(broker.port || 5672) });
    proxy.refusing = true;
    const port = await proxy.listen();
    gw = await startGateway({ BUS_URL: viaPort(AMQP_URL, port), LOG_LEVEL: 'info' });
  });
  after(async () => {
    await gw?.stop();
    await proxy?.close();
  });

  it('listens at once and answers /health 503 while the bus is away', async () => {
    const res = await http('GET', `${gw!.baseUrl}/health`);
    expect(res.status).to.equal(503);
    expect(res.body).to.include({ code: 'SERVICE_UNAVAILABLE' });
    expect(gw!.output()).to.match(/gateway ready .*not reachable yet/);
  });

  it('answers /api routes 503 with Retry-After while the bus is away, not 404: the routes are not known yet', async () => {
    for (const [method, path] of [
      ['GET', '/api/users'],
      ['POST', '/api/login'],
    ] as const) {
      const res = await http(
        method,
        `${gw!.baseUrl}${path}`,
        method === 'POST' ? { body: { email: 'a@example.com', password: 'whatever-it-is' } } : {},
      );
      expect(res.status, `${method} ${path}`).to.equal(503);
      expect(res.body).to.include({ code: 'SERVICE_UNAVAILABLE' });
      expect(res.headers.get('retry-after')).to.match(/^\d+$/);
    }
  });

  it('keeps retrying past the first connect timeout, one log line per attempt rather than one per amqplib retry', async () => {
    await eventually(async () => expect(gw!.output()).to.match(/bus not reachable/), 20000, 250);
    expect(gw!.child.exitCode, 'still running').to.equal(null);
    const failures = gw!
      .output()
      .split('\n')
      .filter((l) => /bus: connecting to .* failed/.test(l));
    expect(failures.length, failures.join('\n')).to.be.at.most(2);
  });

  it('serves the reference services once the broker is back, without a restart', async () => {
    proxy.refusing = false;
    await eventually(async () => expect((await http('GET', `${gw!.baseUrl}/health`)).status).to.equal(200), 30000, 250);
    await eventually(
      async () => expect((await httpAs(['admin:all'])('GET', `${gw!.baseUrl}/api/users`)).status).to.equal(200),
      15000,
      250,
    );
  });
});

describe('npm start on a port that is already taken', function () {
  this.timeout(30000);
  let taken: Server;
  let configDir: string;

  before(async () => {
    taken = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', () => r()));
    configDir = mkdtempSync(join(tmpdir(), 'contracts-port-'));
  });
  after(async () => {
    await new Promise((r) => taken.close(r));
    rmSync(configDir, { recursive: true, force: true });
  });

  it('stops with one line naming the port and a non-zero exit, no stack trace', async () => {
    const port = (taken.address() as AddressInfo).port;
    const r = await run(process.execPath, [join(ROOT, 'dist', 'scripts', 'start.js')], {
      env: {
        JWT_SECRET: TEST_JWT_SECRET,
        BUS_URL: 'embedded',
        PORT: String(port),
        HOST: '127.0.0.1',
        LOG_LEVEL: 'warn',
        EG_CONFIG_DIR: configDir,
      },
      timeoutMs: 25000,
    });
    expect(r.code, r.output).to.equal(CANNOT_LISTEN_EXIT_CODE);
    const lines = r.output.split('\n').filter((l) => l.includes(String(port)));
    expect(lines, r.output).to.have.length(1);
    expect(lines[0]).to.match(/cannot listen on port \d+ on 127\.0\.0\.1: it is already in use/);
    expect(r.output).not.to.match(/EADDRINUSE|Unhandled 'error'|\n\s+at /);
  });
});

describe('SIGTERM to the `npm start` process', function () {
  this.timeout(120000);
  let configDir: string;
  let npm: ChildProcess | undefined;
  let leftOver: number[] = [];

  before(() => {
    configDir = mkdtempSync(join(tmpdir(), 'contracts-npm-start-'));
  });
  after(() => {
    for (const pid of [npm?.pid, ...leftOver]) if (pid && alive(pid)) process.kill(pid, 'SIGKILL');
    rmSync(configDir, { recursive: true, force: true });
  });

  it('stops the gateway itself: the port is freed and no process is left behind', async () => {
    const port = await freePort();
    let out = '';
    npm = spawn('npm', ['start', '--silent'], {
      cwd: ROOT,
      env: {
        ...process.env,
        ...NPM_ENV,
        JWT_SECRET: TEST_JWT_SECRET,
        BUS_URL: 'embedded',
        PORT: String(port),
        LOG_LEVEL: 'warn',
        EG_CONFIG_DIR: configDir,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    npm.stdout!.on('data', (d) => (out += d));
    npm.stderr!.on('data', (d) => (out += d));
    const exited = new Promise<number | null>((r) => npm!.once('exit', (code) => r(code)));
    await eventually(async () => expect(out).to.include('gateway ready'), 90000, 200);
    leftOver = liveDescendants(npm.pid!).map((p) => p.pid);
    expect(leftOver, 'the gateway runs under npm').to.not.be.empty;

    npm.kill('SIGTERM');
    expect(await exited, out).to.equal(0);
    await eventually(async () => expect(leftOver.filter(alive), out).to.deep.equal([]), 15000, 100);
    const refused = await fetch(`http://127.0.0.1:${port}/health`).then(
      () => false,
      () => true,
    );
    expect(refused, 'nothing listens on the port any more').to.equal(true);
  });
});
