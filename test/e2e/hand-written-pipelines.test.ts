import { expect } from 'chai';
import { copyFileSync, cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startGateway, eventually, type GatewayProcess } from '../support/gateway-process';
import { AMQP_URL } from '../support/env';
import { http, httpAs } from '../support/http';
import { AmqpTransport } from '../../plugin/bus/amqp';
import { serve, type RunningService } from '../../sdk';

const ROOT = resolve(__dirname, '..', '..', '..');
/** The operator's example, shown verbatim in docs/design.md: the test runs exactly that file. */
const EXAMPLE = join(ROOT, 'deploy', 'gateway.config.example.yml');

interface Seen {
  method: string;
  url: string;
  body: string;
  authorization?: string;
}

/** A plain HTTP backend (ours, so real rather than nock): answers JSON naming itself and records what it got. */
async function backend(name: string, seen: Seen[]): Promise<{ server: Server; url: string }> {
  const server = createServer((req: IncomingMessage, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, body, authorization: req.headers.authorization });
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify({ source: name, url: req.url }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

describe('hand-written pipelines (the example of docs/design.md, deploy/gateway.config.example.yml)', function () {
  this.timeout(60000);
  const ordersSeen: Seen[] = [];
  const legacySeen: Seen[] = [];
  let orders: { server: Server; url: string };
  let legacy: { server: Server; url: string };
  let gw: GatewayProcess;
  let configDir: string;
  let transport: AmqpTransport;
  let reports: RunningService | undefined;

  before(async () => {
    orders = await backend('orders-backend', ordersSeen);
    legacy = await backend('reports-legacy', legacySeen);
    configDir = mkdtempSync(join(tmpdir(), 'contracts-ops-'));
    copyFileSync(join(ROOT, 'config', 'system.config.yml'), join(configDir, 'system.config.yml'));
    cpSync(join(ROOT, 'config', 'models'), join(configDir, 'models'), { recursive: true });
    copyFileSync(EXAMPLE, join(configDir, 'gateway.config.yml'));
    gw = await startGateway(
      { BUS_URL: AMQP_URL, ORDERS_BACKEND_URL: orders.url, REPORTS_LEGACY_URL: legacy.url },
      { configDir },
    );
    transport = new AmqpTransport(AMQP_URL, { prefix: gw.prefix });
    await transport.start();
  });

  after(async () => {
    await reports?.stop();
    await transport?.close();
    await gw?.stop();
    rmSync(configDir, { recursive: true, force: true });
    await new Promise((r) => orders.server.close(r));
    await new Promise((r) => legacy.server.close(r));
  });

  it('docs/design.md shows the example file verbatim', () => {
    const design = readFileSync(join(ROOT, 'docs', 'design.md'), 'utf8');
    expect(design).to.include(readFileSync(EXAMPLE, 'utf8').trim());
  });

  it('proxy behind jwt-dev-auth + permission: 401 without a token, 403 naming orders:read without it, proxied with it', async () => {
    const none = await http('GET', `${gw.baseUrl}/orders/42`);
    expect(none.status).to.equal(401);
    const without = await httpAs(['orders:create'])('GET', `${gw.baseUrl}/orders/42`);
    expect(without.status).to.equal(403);
    expect(without.body).to.include({ code: 'INSUFFICIENT_PERMISSIONS', requiredPermission: 'orders:read' });
    expect(ordersSeen).to.have.length(0);

    const ok = await httpAs(['orders:read'])('GET', `${gw.baseUrl}/orders/42?x=1`);
    expect(ok.status).to.equal(200);
    expect(ok.body).to.deep.equal({ source: 'orders-backend', url: '/orders/42?x=1' });
    expect(ordersSeen.at(-1)).to.include({ method: 'GET', url: '/orders/42?x=1' });
  });

  it('schema-validation with an inline schema in front of proxy: bad bodies are 400 and never proxied, good ones arrive unchanged', async () => {
    const as = httpAs(['orders:create']);
    const before = ordersSeen.length;
    const bad = await as('POST', `${gw.baseUrl}/orders`, { body: { sku: 'A-1', quantity: 0 } });
    expect(bad.status).to.equal(400);
    expect(bad.body.details).to.have.property('quantity');
    expect(ordersSeen.length).to.equal(before);

    const body = { sku: 'A-1', quantity: 2, note: 'gift' };
    const ok = await as('POST', `${gw.baseUrl}/orders`, { body });
    expect(ok.status).to.equal(200);
    expect(ok.body).to.include({ source: 'orders-backend' });
    const got = ordersSeen.at(-1)!;
    expect(got.method).to.equal('POST');
    expect(JSON.parse(got.body)).to.deep.equal(body);
  });

  it('contract-available gates a step: the legacy backend answers until GetReportQuery is announced, then the bus does', async () => {
    const as = httpAs(['reports:read']);
    const first = await as('GET', `${gw.baseUrl}/reports/monthly?month=5`);
    expect(first.status).to.equal(200);
    expect(first.body).to.include({ source: 'reports-legacy' });

    reports = await serve({
      transport,
      service: 'reports-service',
      operations: [
        {
          contract: {
            messageType: 'GetReportQuery',
            inputSchema: { type: 'object', properties: { month: { type: 'integer' } } },
            outputSchema: { type: 'object' },
            requiredPermissions: ['reports:read'],
          },
          handle: async (input) => ({ source: 'bus', month: input.month }),
        },
      ],
    });
    await eventually(async () => {
      const r = await as('GET', `${gw.baseUrl}/reports/monthly?month=5`);
      expect(r.status).to.equal(200);
      expect(r.body).to.deep.equal({ source: 'bus', month: 5 });
    });
    const legacyCalls = legacySeen.length;
    await as('GET', `${gw.baseUrl}/reports/monthly?month=6`);
    expect(legacySeen.length).to.equal(legacyCalls);
  });
});
