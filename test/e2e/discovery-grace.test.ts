import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { AmqpTransport } from '../../plugin/bus/amqp';
import { serve, type RunningService } from '../../sdk';
import { eventually, startGateway, type GatewayProcess } from '../support/gateway-process';
import { http, httpAs } from '../support/http';
import { AMQP_URL, freePort, uniquePrefix } from '../support/env';
import { deleteBusTopology } from '../support/broker';
import { TcpProxy, viaPort } from '../support/tcp-proxy';

const admin = httpAs(['admin:all']);
/** The default discoveryGraceMs. */
const GRACE_MS = 5000;
/** How late, past the grace, a loaded machine may still show it. */
const SLACK_MS = 1500;

interface Answer {
  /** ms since the first answer of the hammering. */
  at: number;
  route: string;
  status: number;
  code?: string;
  retryAfter: string | null;
}

/**
 * Requests every route in turn, from before the port opens (connection refused is no answer) until `forMs` after the
 * first answer; records each answer.
 */
async function hammer(baseUrl: string, forMs: number): Promise<Answer[]> {
  const answers: Answer[] = [];
  let first: number | undefined;
  const requests: Array<[string, () => Promise<{ status: number; body: any; headers: Headers }>]> = [
    ['list', () => admin('GET', `${baseUrl}/api/widgets`)],
    ['create', () => admin('POST', `${baseUrl}/api/widgets`, { body: { name: 'gear' } })],
    ['unknown', () => admin('GET', `${baseUrl}/api/no-such-things`)],
  ];
  const giveUp = Date.now() + 60000;
  while (first === undefined ? Date.now() < giveUp : Date.now() - first < forMs) {
    for (const [route, send] of requests) {
      try {
        const res = await send();
        first ??= Date.now();
        answers.push({
          at: Date.now() - first,
          route,
          status: res.status,
          code: res.body?.code,
          retryAfter: res.headers.get('retry-after'),
        });
      } catch {
        // Not listening yet.
      }
    }
    await new Promise((r) => setTimeout(r, first === undefined ? 5 : 25));
  }
  return answers;
}

/** The routes the service announces: served, or 503 with Retry-After before they are heard; never 404; once served, served. */
function expectKnownRoutes(answers: Answer[]): void {
  for (const route of ['list', 'create']) {
    const of = answers.filter((a) => a.route === route);
    const ok = route === 'list' ? 200 : 201;
    expect(
      of.filter((a) => a.status === 404),
      `${route}: no 404`,
    ).to.deep.equal([]);
    const firstServed = of.findIndex((a) => a.status === ok);
    expect(firstServed, `${route} is served`).to.be.at.least(0);
    for (const a of of.slice(0, firstServed)) {
      expect(a, `${route} before it is heard`).to.deep.include({ status: 503, code: 'SERVICE_UNAVAILABLE' });
      expect(a.retryAfter).to.match(/^[1-9]\d*$/);
      expect(a.at, '503 only within the grace').to.be.below(GRACE_MS + SLACK_MS);
    }
    expect(
      of.slice(firstServed).map((a) => a.status),
      `${route} once served`,
    ).to.satisfy((s: number[]) => s.every((x) => x === ok));
  }
}

/** A route nobody serves: 503 with Retry-After during the grace, then 404 HANDLER_NOT_FOUND for good. */
function expectUnknownRoute(answers: Answer[], graceStartsBy: number): void {
  const of = answers.filter((a) => a.route === 'unknown');
  expect(of[0], 'the first answer, within the grace').to.deep.include({ status: 503, code: 'SERVICE_UNAVAILABLE' });
  const firstFinal = of.findIndex((a) => a.status === 404);
  expect(firstFinal, 'a 404 after the grace').to.be.above(0);
  for (const a of of.slice(0, firstFinal)) {
    expect(a).to.deep.include({ status: 503, code: 'SERVICE_UNAVAILABLE' });
    expect(Number(a.retryAfter)).to.be.within(1, Math.ceil(GRACE_MS / 1000));
  }
  expect(of[firstFinal]!.at, '404 once the grace is over').to.be.below(graceStartsBy + GRACE_MS + SLACK_MS);
  for (const a of of.slice(firstFinal)) expect(a).to.deep.include({ status: 404, code: 'HANDLER_NOT_FOUND' });
}

describe('the discovery grace: a restarted or reconnected gateway answers 503, not 404, until it has heard the bus', function () {
  this.timeout(180000);
  const prefix = uniquePrefix('grace');
  let configDir: string;
  let proxy: TcpProxy;
  let busUrl: string;
  let transport: AmqpTransport;
  let service: RunningService | undefined;
  let gw: GatewayProcess | undefined;
  /** The first gateway once stopped by the test (its stop() would delete the service's queues too). */
  let stopped: ChildProcess | undefined;

  // The gateway's default grace (the test support turns it off for other tests).
  const start = async (port?: number) =>
    startGateway(
      { BUS_URL: busUrl, BUS_PREFIX: prefix, START_REFERENCE_SERVICES: 'false', DISCOVERY_GRACE_MS: undefined },
      { configDir, port },
    );

  before(async () => {
    configDir = mkdtempSync(join(tmpdir(), 'contracts-grace-'));
    const broker = new URL(AMQP_URL);
    proxy = new TcpProxy({ host: broker.hostname, port: Number(broker.port || 5672) });
    busUrl = viaPort(AMQP_URL, await proxy.listen());
    transport = new AmqpTransport(AMQP_URL, { prefix });
    await transport.start();
    service = await serve({
      transport,
      service: 'widgets-service',
      ttlMs: 30000,
      operations: [
        {
          contract: {
            messageType: 'ListWidgetsQuery',
            inputSchema: { type: 'object' },
            outputSchema: { type: 'object' },
            requiredPermissions: ['widgets:read'],
          },
          handle: () => ({ widgets: [] }),
        },
        {
          contract: {
            messageType: 'CreateWidgetCommand',
            inputSchema: { type: 'object', properties: { name: { type: 'string' } } },
            outputSchema: { type: 'object' },
            requiredPermissions: ['widgets:create'],
          },
          handle: (input) => ({ widgetId: 'w1', ...input }),
        },
      ],
    });
  });
  after(async () => {
    if (stopped && stopped.exitCode === null && stopped.signalCode === null) stopped.kill('SIGKILL');
    await service?.stop().catch(() => undefined);
    await transport?.close().catch(() => undefined);
    await gw?.stop().catch(() => undefined);
    await proxy?.close();
    await deleteBusTopology(AMQP_URL, prefix).catch(() => undefined);
    if (configDir) rmSync(configDir, { recursive: true, force: true });
  });

  it('restarted with the services announcing: no 404 from the first moment, 503 only within the grace', async () => {
    gw = await start();
    await eventually(async () => {
      const res = await admin('GET', `${gw!.baseUrl}/api/widgets`);
      expect(res.status, res.text).to.equal(200);
    }, 15000);
    // A restart: the same configuration directory (its routes written) and bus, a new process.
    stopped = gw.child;
    const exited = new Promise((r) => stopped!.once('exit', r));
    stopped.kill('SIGTERM');
    await exited;
    gw = undefined;

    const port = await freePort();
    const hammering = hammer(`http://127.0.0.1:${port}`, GRACE_MS + 3000);
    gw = await start(port);
    const answers = await hammering;
    expectKnownRoutes(answers);
    expectUnknownRoute(answers, 0);
  });

  it('after a bus reconnect: unknown routes 503 for the grace again, then 404; known routes served throughout', async () => {
    const base = gw!.baseUrl;
    // Past the restart's grace: an unknown route is final.
    expect((await admin('GET', `${base}/api/no-such-things`)).status).to.equal(404);
    proxy.refusing = true;
    proxy.killAll();
    await eventually(async () => expect((await http('GET', `${base}/health`)).status).to.equal(503), 10000, 50);
    const down = await admin('GET', `${base}/api/no-such-things`);
    expect(down.status, 'bus down: 503, as before').to.equal(503);
    proxy.refusing = false;
    await eventually(async () => expect((await http('GET', `${base}/health`)).status).to.equal(200), 20000, 50);
    const answers = await hammer(base, GRACE_MS + 3000);
    expectKnownRoutes(answers);
    expectUnknownRoute(answers, 0);
  });
});
