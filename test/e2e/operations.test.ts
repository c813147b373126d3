import { expect } from 'chai';
import { startGateway, eventually, type GatewayProcess } from '../support/gateway-process';
import { http, httpAs } from '../support/http';
import { AMQP_URL } from '../support/env';
import { TcpProxy, viaPort } from '../support/tcp-proxy';
import { AmqpTransport } from '../../plugin/bus/amqp';
import { serve, answer, type RunningService } from '../../sdk';
import { referenceContracts, validateOpenApi } from '../openapi/support';
import { Parser } from '@asyncapi/parser';

/** Any authenticated caller: the discovery listing needs a token, no particular permission. */
const anyUser = httpAs([], 'plain-user');
const admin = httpAs(['admin:all']);

function expectNotFound(res: Awaited<ReturnType<typeof http>>): void {
  expect(res.status, res.text).to.equal(404);
  expect(res.headers.get('content-type')).to.match(/^application\/json/);
  expect(res.body).to.include({ code: 'HANDLER_NOT_FOUND', error: 'Not Found' });
  expect(res.body.message).to.be.a('string');
  expect(res.body.timestamp).to.be.a('string');
  expect(res.body.correlationId).to.equal(res.headers.get('x-correlation-id'));
  expect(res.headers.get('x-request-id')).to.be.a('string');
}

describe('operations endpoints, OpenAPI and the not-found answer (embedded bus)', function () {
  this.timeout(30000);
  let gw: GatewayProcess;
  before(async () => {
    gw = await startGateway({ BUS_URL: 'embedded' });
  });
  after(async () => gw?.stop());

  it('GET /health: 200 with the bus, the counts and the uptime', async () => {
    const res = await http('GET', `${gw.baseUrl}/health`);
    expect(res.status).to.equal(200);
    expect(res.body).to.have.keys(
      'status',
      'bus',
      'rateLimitStore',
      'announcements',
      'contracts',
      'services',
      'openCircuits',
      'maintenance',
      'uptimeSeconds',
    );
    expect(res.body.openCircuits).to.deep.equal([]);
    expect(res.body.maintenance).to.deep.equal([]);
    expect(res.body.status).to.equal('ok');
    expect(res.body.bus).to.deep.equal({ kind: 'inprocess', state: 'up' });
    expect(res.body.rateLimitStore).to.deep.equal({ state: 'ok' });
    expect(res.body.announcements).to.deep.equal({ state: 'heard' });
    expect(res.body.contracts).to.equal(referenceContracts().length);
    expect(res.body.services).to.equal(2);
    expect(res.body.uptimeSeconds).to.be.a('number').and.at.least(0);
    expect(res.headers.get('x-correlation-id')).to.be.a('string');
  });

  it('GET /api/discovery/contracts: 401 without a token; with any token every contract, its routes and instances', async () => {
    const anonymous = await http('GET', `${gw.baseUrl}/api/discovery/contracts`);
    expect(anonymous.status).to.equal(401);
    expect(anonymous.body.code).to.equal('NO_AUTH_HEADER');
    expect(anonymous.body.correlationId).to.be.a('string');
    const res = await anyUser('GET', `${gw.baseUrl}/api/discovery/contracts`);
    expect(res.status, res.text).to.equal(200);
    expect(res.body.count).to.equal(referenceContracts().length);
    expect(res.body.services).to.deep.equal(['auth-service', 'users-service']);
    const byType = Object.fromEntries(res.body.contracts.map((c: { messageType: string }) => [c.messageType, c]));
    expect(byType.CreateUserCommand.endpoints).to.deep.equal([
      { method: 'POST', path: '/api/users', successStatus: 201 },
    ]);
    expect(byType.DeleteUserCommand.endpoints).to.deep.equal([
      { method: 'DELETE', path: '/api/users/:userId', successStatus: 204 },
    ]);
    expect(byType.GetUserQuery.endpoints).to.deep.include({
      method: 'GET',
      path: '/api/users',
      successStatus: 200,
      whenQuery: 'userId',
    });
    expect(byType.GetUserQuery.requiredPermissions).to.deep.equal(['users:read']);
    expect(byType.GetUserQuery.instances).to.have.length(1);
    expect(byType.GetUserQuery.instances[0]).to.include({ service: 'users-service' });
    expect(Date.parse(byType.GetUserQuery.instances[0].leaseExpiresAt)).to.be.greaterThan(Date.now());
    expect(byType.AuthenticateCommand.public).to.equal(true);
  });

  it('GET /debug/contracts is off by default: 404', async () => {
    expect((await http('GET', `${gw.baseUrl}/debug/contracts`)).status).to.equal(404);
    expect((await admin('GET', `${gw.baseUrl}/debug/contracts`)).status).to.equal(404);
  });

  it("an unknown /api path: 404 HANDLER_NOT_FOUND in the error body, with the caller's correlation id", async () => {
    const res = await http('GET', `${gw.baseUrl}/api/no-such-thing`, {
      headers: { 'x-correlation-id': 'probe-404-1' },
    });
    expectNotFound(res);
    expect(res.body.correlationId).to.equal('probe-404-1');
    expectNotFound(await admin('POST', `${gw.baseUrl}/api/users/u1/nothing/here`, { body: {} }));
    expectNotFound(await http('GET', `${gw.baseUrl}/api`));
    expect(res.text).not.to.contain('no-such-thing');
  });

  it('an unknown method on a served path: 404 HANDLER_NOT_FOUND; the served methods still answer', async () => {
    expectNotFound(await admin('PATCH', `${gw.baseUrl}/api/users`, { body: { email: 'x@example.com' } }));
    expectNotFound(await admin('DELETE', `${gw.baseUrl}/api/users`));
    expectNotFound(await http('PATCH', `${gw.baseUrl}/api/users/u1`, { body: {} }));
    expect((await admin('GET', `${gw.baseUrl}/api/users`)).status).to.equal(200);
    expect((await http('GET', `${gw.baseUrl}/api/users`)).status, 'a served route still authenticates first').to.equal(
      401,
    );
  });

  it('GET /api-docs/openapi.json: a valid OpenAPI 3.1 document of the users API, cached with an ETag', async () => {
    const res = await http('GET', `${gw.baseUrl}/api-docs/openapi.json`);
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^application\/json/);
    const doc = res.body;
    const result = await validateOpenApi(doc);
    expect(result.errors, JSON.stringify(result.errors)).to.equal(undefined);
    expect(doc.openapi).to.equal('3.1.0');

    const create = doc.paths['/api/users'].post;
    expect(create.responses).to.have.property('201');
    expect(create['x-required-permissions']).to.deep.equal(['users:create']);
    expect(create.description).to.contain('users:create');
    expect(create.tags).to.deep.equal(['users-service']);
    expect(create.security).to.deep.include({ bearerAuth: [] });
    expect(create.requestBody.content['application/json'].schema.$ref).to.equal(
      '#/components/schemas/CreateUserCommand.Input',
    );
    const get = doc.paths['/api/users/{userId}'].get;
    expect(get.parameters[0]).to.include({ name: 'userId', in: 'path', required: true });
    expect(get['x-required-permissions']).to.deep.equal(['users:read']);
    expect(get.responses).to.include.keys('200', '401', '403', '404', '500', '503');
    expect(doc.paths['/api/users/{userId}'].delete.responses).to.have.property('204');
    expect(doc.paths['/api/users/{userId}'].put['x-required-permissions']).to.deep.equal(['users:update']);
    expect(doc.paths['/api/users'].get.parameters.map((p: { name: string }) => p.name)).to.include.members([
      'page',
      'pageSize',
      'userId',
    ]);
    expect(doc.paths['/api/login'].post.security).to.deep.equal([]);
    // Development auth is off here: its header schemes are not offered.
    expect(doc.components.securitySchemes).to.have.keys('bearerAuth');
    const example = create.requestBody.content['application/json'].example;
    expect(example).to.include({ email: 'user@example.com' });
    // What Dredd or Postman would send from the document: the gateway and the service take it.
    const sent = await admin('POST', `${gw.baseUrl}/api/users`, { body: example });
    expect(sent.status, sent.text).to.equal(201);
    expect(doc.paths).to.include.keys('/health', '/api/discovery/contracts', '/api-docs');
    expect(doc.paths).not.to.have.property('/debug/contracts');

    const etag = res.headers.get('etag');
    expect(etag).to.be.a('string');
    const again = await http('GET', `${gw.baseUrl}/api-docs/openapi.json`, { headers: { 'if-none-match': etag! } });
    expect(again.status).to.equal(304);
  });

  it("GET /api-docs/asyncapi.json: a valid AsyncAPI 3.0 document of the bus with the services' request channels", async () => {
    const res = await http('GET', `${gw.baseUrl}/api-docs/asyncapi.json`);
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^application\/json/);
    const diagnostics = await new Parser().validate(res.text);
    expect(diagnostics.filter((d) => d.severity === 0).map((d) => d.message)).to.deep.equal([]);
    expect(res.body.channels['requests.users-service'].messages).to.have.property('CreateUserCommand');
    expect(res.body.channels['requests.auth-service'].messages).to.have.property('AuthenticateCommand');
    // The embedded bus has no broker to name: no server, and the description says so.
    expect(res.body).not.to.have.property('servers');
    expect(res.body.info.description).to.include('BUS_URL=embedded');
  });

  it('GET /api-docs: the Swagger UI page, its assets served by the gateway itself', async () => {
    const page = await http('GET', `${gw.baseUrl}/api-docs`);
    expect(page.status).to.equal(200);
    expect(page.headers.get('content-type')).to.match(/^text\/html/);
    const sources = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1] as string);
    expect(sources).not.to.be.empty;
    for (const src of sources) {
      expect(src, 'no CDN').to.match(/^\/api-docs\//);
      const asset = await http('GET', `${gw.baseUrl}${src}`);
      expect(asset.status, src).to.equal(200);
    }
    const init = await http('GET', `${gw.baseUrl}/api-docs/assets/init.js`);
    expect(init.text).to.contain('/api-docs/openapi.json');
    expect(
      (await http('GET', `${gw.baseUrl}/api-docs/assets/index.html`)).status,
      'only the assets the page uses',
    ).to.equal(404);
  });
});

describe('operations endpoints on RabbitMQ (debug on, the broker going away)', function () {
  this.timeout(60000);
  let gw: GatewayProcess;
  let proxy: TcpProxy;
  let transport: AmqpTransport;
  /** The gateway's broker address, `host:port` of the proxy: what /health names as its node. */
  let node: string;
  const running: RunningService[] = [];

  before(async () => {
    const broker = new URL(AMQP_URL);
    proxy = new TcpProxy({ host: broker.hostname, port: Number(broker.port || 5672) });
    const port = await proxy.listen();
    node = `127.0.0.1:${port}`;
    gw = await startGateway({ BUS_URL: viaPort(AMQP_URL, port), DEBUG_ENDPOINTS: 'true' });
    transport = new AmqpTransport(AMQP_URL, { prefix: gw.prefix });
    await transport.start();
  });
  after(async () => {
    for (const s of running) await s.stop().catch(() => undefined);
    await transport?.close();
    await gw?.stop();
    await proxy?.close();
  });

  it('GET /debug/contracts (enabled): the cached entries with ages and leases, the instances', async () => {
    const res = await http('GET', `${gw.baseUrl}/debug/contracts`);
    expect(res.status, res.text).to.equal(200);
    expect(res.body.bus).to.deep.equal({ kind: 'amqp', state: 'up' });
    const entry = res.body.entries.find((e: { messageType: string }) => e.messageType === 'GetUserQuery');
    expect(entry.targetService).to.equal('users-service');
    expect(entry.instanceIds).to.have.length(1);
    expect(entry.ageMs).to.be.a('number').and.at.least(0);
    expect(entry.leaseRemainingMs).to.be.a('number').and.above(0);
    const instance = res.body.instances.find((i: { service: string }) => i.service === 'users-service');
    expect(instance.messageTypes).to.include('GetUserQuery');
    expect(Date.parse(instance.leaseExpiresAt)).to.be.greaterThan(Date.parse(instance.lastSeen));
    expect(res.body.openapi.version).to.be.a('string');
    const doc = (await http('GET', `${gw.baseUrl}/api-docs/openapi.json`)).body;
    expect(doc.paths).to.have.property('/debug/contracts');
  });

  it('regenerates the OpenAPI document when a service announces or withdraws a contract', async () => {
    const first = await http('GET', `${gw.baseUrl}/api-docs/openapi.json`);
    expect(first.body.paths).not.to.have.property('/api/gadgets');
    const gadgets = await serve({
      transport,
      service: 'gadgets-service',
      operations: [
        {
          contract: {
            messageType: 'CreateGadgetCommand',
            inputSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
            outputSchema: { type: 'object', properties: { gadgetId: { type: 'string' } } },
            requiredPermissions: ['gadgets:create'],
          },
          handle: (input) => answer({ gadgetId: 'g1', ...input }),
        },
      ],
    });
    running.push(gadgets);
    const updated = await eventually(async () => {
      const res = await http('GET', `${gw.baseUrl}/api-docs/openapi.json`);
      expect(res.body.paths).to.have.property('/api/gadgets');
      return res;
    });
    expect(updated.headers.get('etag')).not.to.equal(first.headers.get('etag'));
    const create = updated.body.paths['/api/gadgets'].post;
    expect(create['x-required-permissions']).to.deep.equal(['gadgets:create']);
    expect(create.tags).to.deep.equal(['gadgets-service']);
    expect((await validateOpenApi(updated.body)).valid).to.equal(true);
    // The route in the document is served (once the host has reloaded the rewritten file: the document follows the
    // registry at once, the host a moment later), and its wrong method is the JSON 404.
    await eventually(async () => {
      expect((await admin('POST', `${gw.baseUrl}/api/gadgets`, { body: { name: 'x' } })).status).to.equal(201);
    });
    expectNotFound(await admin('GET', `${gw.baseUrl}/api/gadgets`));

    await gadgets.stop();
    running.pop();
    await eventually(async () => {
      const res = await http('GET', `${gw.baseUrl}/api-docs/openapi.json`);
      expect(res.body.paths).not.to.have.property('/api/gadgets');
    });
    expectNotFound(await admin('POST', `${gw.baseUrl}/api/gadgets`, { body: { name: 'x' } }));
    // Reloads of the host re-ran init(); the gateway routes still answer, once.
    expect((await http('GET', `${gw.baseUrl}/health`)).status).to.equal(200);
  });

  it('GET /health: 503 in the error body with the same fields while the broker is away, 200 again after', async () => {
    const up = await http('GET', `${gw.baseUrl}/health`);
    expect(up.status).to.equal(200);
    expect(up.body.bus).to.deep.equal({ kind: 'amqp', state: 'up', node });

    proxy.refusing = true;
    proxy.killAll();
    const down = await eventually(
      async () => {
        const res = await http('GET', `${gw.baseUrl}/health`);
        expect(res.status, res.text).to.equal(503);
        return res;
      },
      10000,
      100,
    );
    expect(down.body).to.include({ code: 'SERVICE_UNAVAILABLE', error: 'Service Unavailable', status: 'unavailable' });
    expect(down.body.bus).to.deep.equal({ kind: 'amqp', state: 'down' });
    expect(down.body).to.include.keys(
      'rateLimitStore',
      'contracts',
      'services',
      'uptimeSeconds',
      'message',
      'timestamp',
      'retryAfter',
    );
    expect(down.body.correlationId).to.equal(down.headers.get('x-correlation-id'));
    expect(down.headers.get('retry-after')).to.match(/^\d+$/);
    expect(down.text).not.to.match(/amqp:\/\/|ECONNREFUSED|guest/);

    proxy.refusing = false;
    const back = await eventually(
      async () => {
        const res = await http('GET', `${gw.baseUrl}/health`);
        expect(res.status, res.text).to.equal(200);
        return res;
      },
      30000,
      200,
    );
    expect(back.body.bus).to.deep.equal({ kind: 'amqp', state: 'up', node });
  });
});
