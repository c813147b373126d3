import { expect } from 'chai';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { configDirWithGateway } from '../support/config-dir';
import { eventually } from '../support/gateway-process';
import { gatewayWithBus } from '../support/gateway-with-bus';
import { httpAs } from '../support/http';

/** Authenticated as an administrator: what is tested here lies behind authentication. */
const http = httpAs(['admin:all']);
import { AMQP_URL } from '../support/env';
import { AmqpTransport } from '../../plugin/bus/amqp';
import { serve, answer } from '../../sdk';

/** A config directory whose gateway.config.yml has hand-written entries and comments of an operator. */
function handWrittenConfigDir(): string {
  return configDirWithGateway(
    `# Operator's gateway: keep this comment.
http:
  port: \${PORT:-8080}
  hostname: 127.0.0.1

apiEndpoints:
  # a hand-written endpoint, answered by the host itself
  ping:
    host: '*'
    paths: ['/ping']

serviceEndpoints: {}

policies:
  - terminate # used by the ping pipeline

pipelines:
  ping:
    apiEndpoints: [ping]
    policies:
      - terminate:
          - action:
              statusCode: 200
              message: pong
`,
    'contracts-hand-',
  );
}

describe('discovery through Express Gateway and RabbitMQ', () => {
  const fx = gatewayWithBus({}, handWrittenConfigDir);

  it('writes the generated routes and keeps every hand-written entry and comment', async () => {
    const text = fx.gw.gatewayConfig();
    expect(text).to.contain("# Operator's gateway: keep this comment.");
    expect(text).to.contain('# a hand-written endpoint, answered by the host itself');
    expect(text).to.contain('- terminate # used by the ping pipeline');
    const cfg = parse(text);
    expect(cfg.apiEndpoints.ping).to.deep.equal({ host: '*', paths: ['/ping'] });
    expect(cfg.policies).to.include.members(['terminate', 'contract-router']);
    // Each route is an apiEndpoint carrying its contract; every contract route runs the one shared pipeline.
    expect(cfg.apiEndpoints['contracts-get-api-users-userid']).to.deep.equal({
      host: '*',
      paths: ['/api/users/:userId'],
      methods: ['GET'],
      contract: { messageType: 'GetUserQuery', kind: 'get' },
    });
    expect(cfg.apiEndpoints['contracts-get-api-users'].contract).to.deep.equal({
      messageType: 'ListUsersQuery',
      kind: 'list',
      variants: [{ whenQuery: 'userId', messageType: 'GetUserQuery', kind: 'get' }],
    });
    const shared = cfg.pipelines['contracts-routes'];
    expect(shared.apiEndpoints).to.include.members([
      'contracts-get-api-users-userid',
      'contracts-get-api-users',
      'contracts-post-api-users',
    ]);
    expect(
      shared.policies.map((s: Record<string, unknown>) => Object.keys(s)[0]),
      'the pipeline order of docs/design.md',
    ).to.deep.equal([
      'request-trace',
      'cors',
      'contract-rate-limit',
      'jwt-dev-auth',
      'permission',
      'schema-validation',
      'contract-router',
    ]);
    expect(
      Object.keys(cfg.pipelines)
        .filter((n) => n.startsWith('contracts-'))
        .sort(),
    ).to.deep.equal(['contracts-not-found', 'contracts-options-api', 'contracts-routes']);
    const ping = await http('GET', `${fx.gw.baseUrl}/ping`);
    expect(ping.status).to.equal(200);
    expect(ping.text).to.equal('pong');
  });

  it('does not rewrite gateway.config.yml while the contracts stay the same (no reload loop)', async function () {
    this.timeout(10000);
    const file = join(fx.configDir, 'gateway.config.yml');
    const before = statSync(file);
    const text = fx.gw.gatewayConfig();
    // Longer than the host's watcher delay (~2 s) plus a reload and a round of re-announcements.
    await new Promise((r) => setTimeout(r, 3500));
    expect(statSync(file).mtimeMs).to.equal(before.mtimeMs);
    expect(statSync(file).ino).to.equal(before.ino);
    expect(fx.gw.gatewayConfig()).to.equal(text);
  });

  it('serves a contract announced after start, then removes it when the service stops', async () => {
    const widgets = await serve({
      transport: fx.transport,
      service: 'widgets-service',
      ttlMs: 3000,
      operations: [
        {
          contract: {
            messageType: 'CreateWidgetCommand',
            inputSchema: { type: 'object', properties: { name: { type: 'string' }, size: { type: 'integer' } } },
            outputSchema: { type: 'object' },
            requiredPermissions: ['widgets:create'],
          },
          handle: (input) => answer({ widgetId: 'w1', ...input }, { location: '/api/widgets/w1' }),
        },
      ],
    });
    const created = await eventually(async () => {
      const res = await http('POST', `${fx.gw.baseUrl}/api/widgets`, { body: { name: 'gear', size: 3 } });
      expect(res.status, res.text).to.equal(201);
      return res;
    });
    expect(created.body).to.deep.equal({ widgetId: 'w1', name: 'gear', size: 3 });
    expect(created.headers.get('location')).to.equal('/api/widgets/w1');
    expect(fx.gw.gatewayConfig()).to.contain('contracts-post-api-widgets');

    await widgets.stop();
    await eventually(async () => {
      const res = await http('POST', `${fx.gw.baseUrl}/api/widgets`, { body: { name: 'gear' } });
      expect(res.status).to.equal(404);
      expect(fx.gw.gatewayConfig()).not.to.contain('contracts-post-api-widgets');
    });
    // The rest of the API is untouched by the change.
    expect((await http('GET', `${fx.gw.baseUrl}/api/users`)).status).to.equal(200);
  });

  it('routes other commands to their kebab-case path and to /api/actions, other queries to /api/data', async () => {
    fx.running.push(
      await serve({
        transport: fx.transport,
        service: 'ops-service',
        operations: [
          {
            contract: {
              messageType: 'ResetPasswordCommand',
              inputSchema: { type: 'object', properties: { email: { type: 'string' } } },
              outputSchema: { type: 'object' },
              requiredPermissions: [],
            },
            handle: (input, ctx) => ({ reset: input.email, correlationId: ctx.correlationId }),
          },
          {
            contract: {
              messageType: 'SalesReportQuery',
              inputSchema: { type: 'object', properties: { year: { type: 'integer' } } },
              outputSchema: { type: 'object' },
              requiredPermissions: [],
            },
            handle: (input) => ({ year: input.year }),
          },
          {
            contract: {
              messageType: 'CreateProduct',
              inputSchema: {
                type: 'object',
                properties: { name: { type: 'string' }, price: { type: 'number' }, categoryId: { type: 'string' } },
              },
              outputSchema: { type: 'object' },
              requiredPermissions: ['product:create'],
            },
            handle: (input) => ({ created: input }),
          },
        ],
      }),
    );
    const kebab = await eventually(async () => {
      const res = await http('POST', `${fx.gw.baseUrl}/api/reset-password`, {
        body: { email: 'a@b.c' },
        headers: { 'x-correlation-id': 'kebab-1' },
      });
      expect(res.status, res.text).to.equal(200);
      return res;
    });
    expect(kebab.body).to.deep.equal({ reset: 'a@b.c', correlationId: 'kebab-1' });

    const generic = await http('POST', `${fx.gw.baseUrl}/api/actions`, {
      body: { messageType: 'ResetPasswordCommand', input: { email: 'x@y.z' } },
    });
    expect(generic.status, generic.text).to.equal(200);
    expect(generic.body.reset).to.equal('x@y.z');

    const unknown = await http('POST', `${fx.gw.baseUrl}/api/actions`, {
      body: { messageType: 'NoSuchCommand', input: {} },
    });
    expect(unknown.status).to.equal(404);
    expect(unknown.body.code).to.equal('HANDLER_NOT_FOUND');

    const data = await http('GET', `${fx.gw.baseUrl}/api/data?messageType=SalesReportQuery&year=2025`);
    expect(data.status, data.text).to.equal(200);
    expect(data.body).to.deep.equal({ year: 2025 });

    const product = await http('POST', `${fx.gw.baseUrl}/api/create-product`, {
      body: { name: 'Lamp', price: 19.5, categoryId: 'c1' },
    });
    expect(product.status, product.text).to.equal(200);
    expect(product.body.created).to.deep.equal({ name: 'Lamp', price: 19.5, categoryId: 'c1' });
  });

  it('answers 504 TIMEOUT with timeoutMs when the service is too slow, and 503 when nobody serves the contract', async () => {
    let release: () => void = () => undefined;
    const slow = await serve({
      transport: fx.transport,
      service: 'slow-service',
      ttlMs: 60000,
      operations: [
        {
          contract: {
            messageType: 'GetSlowThingQuery',
            inputSchema: { type: 'object', properties: { slowThingId: { type: 'string' } } },
            outputSchema: { type: 'object' },
            requiredPermissions: [],
            timeoutMs: 300,
          },
          handle: () =>
            new Promise((r) => {
              release = () => r({ late: true });
            }),
        },
      ],
    });
    const timedOut = await eventually(async () => {
      const res = await http('GET', `${fx.gw.baseUrl}/api/slow-things/s1`);
      expect(res.status, res.text).to.equal(504);
      return res;
    });
    expect(timedOut.body).to.include({ code: 'TIMEOUT', timeoutMs: 300 });
    release();

    // The service's connection goes away without a withdrawal, as when it crashes: the route is still
    // there, nobody consumes its queue.
    await fx.transport.close();
    fx.transport = new AmqpTransport(AMQP_URL, { prefix: fx.gw.prefix });
    await fx.transport.start();
    const started = Date.now();
    const res = await http('GET', `${fx.gw.baseUrl}/api/slow-things/s1`);
    expect(res.status, res.text).to.equal(503);
    expect(res.body.code).to.equal('SERVICE_UNAVAILABLE');
    expect(res.headers.get('retry-after')).to.match(/^\d+$/);
    expect(Date.now() - started).to.be.below(1000);
    await slow.stop();
  });
});
