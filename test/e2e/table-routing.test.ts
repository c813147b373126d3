import { expect } from 'chai';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { configDirWithGateway } from '../support/config-dir';
import { eventually } from '../support/gateway-process';
import { gatewayWithBus } from '../support/gateway-with-bus';
import { http as anonymous, httpAs } from '../support/http';
import { serve } from '../../sdk';
import { AUTO_TABLE_ABOVE } from '../../plugin/routing/routing-mode';

const http = httpAs(['admin:all']);

/** A hand-written endpoint under /api that no contract serves: it must stay reachable behind the table endpoint. */
function configDirWithHandWritten(): string {
  return configDirWithGateway(
    `http:
  port: \${PORT:-8080}
  hostname: 127.0.0.1
apiEndpoints:
  status:
    host: '*'
    paths: ['/api/status']
serviceEndpoints: {}
policies:
  - terminate
pipelines:
  status:
    apiEndpoints: [status]
    policies:
      - terminate:
          - action:
              statusCode: 200
              message: up
`,
    'contracts-table-',
  );
}

describe('routing: table, through Express Gateway and RabbitMQ', () => {
  const fx = gatewayWithBus({ CONTRACT_ROUTING: 'table' }, configDirWithHandWritten);

  it('writes one endpoint for every contract route, whose pipeline starts with route-table', () => {
    const cfg = parse(fx.gw.gatewayConfig());
    const generated = Object.keys(cfg.apiEndpoints).filter((n) => n.startsWith('contracts-'));
    expect(generated).to.deep.equal(['contracts-options-api', 'contracts-api', 'contracts-not-found']);
    expect(cfg.apiEndpoints['contracts-api']).to.deep.equal({
      host: '*',
      pathRegex: '^(?:/(?:[aA][pP][iI])(?:/.*)?)$',
    });
    expect(
      cfg.pipelines['contracts-api'].policies.map((s: Record<string, unknown>) => Object.keys(s)[0]),
    ).to.deep.equal([
      'route-table',
      'request-trace',
      'cors',
      'contract-rate-limit',
      'jwt-dev-auth',
      'permission',
      'schema-validation',
      'contract-router',
    ]);
    expect(cfg.policies).to.include('route-table');
    expect(cfg.apiEndpoints.status, 'hand-written entries stay').to.deep.equal({ host: '*', paths: ['/api/status'] });
  });

  it('serves the users routes with their path parameters, case-insensitively and with a trailing slash, as Express would', async () => {
    const created = await http('POST', `${fx.gw.baseUrl}/api/users`, {
      body: { email: 'table@example.com', firstName: 'Tab', lastName: 'Le', password: 'long-enough-1' },
    });
    expect(created.status, created.text).to.equal(201);
    const id = created.body.userId as string;
    const got = await http('GET', `${fx.gw.baseUrl}/api/users/${id}`);
    expect(got.status, got.text).to.equal(200);
    expect(got.body.email).to.equal('table@example.com');
    expect(got.headers.get('x-correlation-id')).to.be.a('string');
    expect((await http('GET', `${fx.gw.baseUrl}/API/Users/${id}/`)).body.email).to.equal('table@example.com');
    // The query-string variant of the collection path still picks GetUserQuery.
    expect((await http('GET', `${fx.gw.baseUrl}/api/users?userId=${id}`)).body.email).to.equal('table@example.com');
    const updated = await http('PUT', `${fx.gw.baseUrl}/api/users/${id}`, { body: { firstName: 'Table' } });
    expect(updated.status, updated.text).to.equal(200);
    expect((await http('DELETE', `${fx.gw.baseUrl}/api/users/${id}`)).status).to.equal(204);
    expect((await http('GET', `${fx.gw.baseUrl}/api/users/${id}`)).status).to.equal(404);
  });

  it('authenticates and validates as on per-route endpoints: 401 without a token, 400 on bad input', async () => {
    const res = await anonymous('GET', `${fx.gw.baseUrl}/api/users`);
    expect(res.status).to.equal(401);
    expect(res.body.code).to.equal('NO_AUTH_HEADER');
    const bad = await http('POST', `${fx.gw.baseUrl}/api/users`, { body: { email: 'not-an-email' } });
    expect(bad.status).to.equal(400);
    expect(bad.body.code).to.be.oneOf(['MISSING_REQUIRED_FIELD', 'INVALID_FORMAT', 'VALIDATION_ERROR']);
  });

  it('lets a path no contract serves go on to the hand-written entries, then to the JSON 404', async () => {
    const status = await anonymous('GET', `${fx.gw.baseUrl}/api/status`);
    expect(status.status).to.equal(200);
    expect(status.text).to.equal('up');
    const missing = await http('GET', `${fx.gw.baseUrl}/api/nothing-here`);
    expect(missing.status).to.equal(404);
    expect(missing.body.code).to.equal('HANDLER_NOT_FOUND');
    const wrongMethod = await http('PATCH', `${fx.gw.baseUrl}/api/users`);
    expect(wrongMethod.status).to.equal(404);
    expect(wrongMethod.body.code).to.equal('HANDLER_NOT_FOUND');
  });

  it('answers a malformed percent-escape in a path parameter with the error body (400), no stack trace', async () => {
    const res = await http('GET', `${fx.gw.baseUrl}/api/users/%E0%A4%A`);
    expect(res.status).to.equal(400);
    expect(res.body.code).to.equal('BAD_REQUEST');
    expect(res.text).not.to.match(/at .*\.js|node_modules/);
  });

  it('serves a contract announced after start on its next request, without rewriting gateway.config.yml', async () => {
    const file = join(fx.configDir, 'gateway.config.yml');
    const before = statSync(file).mtimeMs;
    const widgets = await serve({
      transport: fx.transport,
      service: 'widgets-service',
      ttlMs: 3000,
      operations: [
        {
          contract: {
            messageType: 'GetWidgetQuery',
            inputSchema: { type: 'object', properties: { widgetId: { type: 'string' } } },
            outputSchema: { type: 'object' },
            requiredPermissions: [],
          },
          handle: (input) => ({ widgetId: input.widgetId, name: 'sprocket' }),
        },
      ],
    });
    fx.running.push(widgets);
    const res = await eventually(async () => {
      const r = await http('GET', `${fx.gw.baseUrl}/api/widgets/w%201`);
      if (r.status !== 200) throw new Error(`still ${r.status}`);
      return r;
    }, 5000);
    expect(res.body).to.deep.equal({ widgetId: 'w 1', name: 'sprocket' });
    expect(statSync(file).mtimeMs, 'the table endpoint covers the new route: the file stays as it was').to.equal(
      before,
    );
    await widgets.stop();
    fx.running.pop();
    await eventually(async () => {
      const r = await http('GET', `${fx.gw.baseUrl}/api/widgets/w1`);
      if (r.status !== 404) throw new Error(`still ${r.status}`);
    }, 8000);
  });
});

describe('routing: auto (the default), through Express Gateway and RabbitMQ', () => {
  const fx = gatewayWithBus({}, configDirWithHandWritten);
  const generated = () =>
    Object.keys(parse(fx.gw.gatewayConfig()).apiEndpoints).filter((n) => n.startsWith('contracts-'));

  it(`moves to the table endpoint when a service brings the routes above ${AUTO_TABLE_ABOVE}, serving every route throughout, and back when it goes`, async () => {
    expect(generated(), 'few routes: one apiEndpoint each').to.include('contracts-get-api-users-userid');
    const count = AUTO_TABLE_ABOVE;
    const bulk = await serve({
      transport: fx.transport,
      service: 'bulk-service',
      ttlMs: 3000,
      operations: Array.from({ length: count }, (_, i) => ({
        contract: {
          messageType: `GetBulk${i}Query`,
          inputSchema: { type: 'object', properties: { itemId: { type: 'string' } } },
          outputSchema: { type: 'object' },
          requiredPermissions: [],
          http: { method: 'GET' as const, paths: [`/api/bulk/items-${i}/:itemId`] },
        },
        handle: (input: Record<string, unknown>) => ({ item: i, itemId: input.itemId }),
      })),
    });
    fx.running.push(bulk);
    await eventually(async () => {
      if (!generated().includes('contracts-api')) throw new Error('still one endpoint per route');
    }, 8000);
    expect(generated()).to.deep.equal(['contracts-options-api', 'contracts-api', 'contracts-not-found']);
    const last = await eventually(async () => {
      const r = await http('GET', `${fx.gw.baseUrl}/api/bulk/items-${count - 1}/x1`);
      if (r.status !== 200) throw new Error(`still ${r.status}`);
      return r;
    }, 5000);
    expect(last.body).to.deep.equal({ item: count - 1, itemId: 'x1' });
    const created = await http('POST', `${fx.gw.baseUrl}/api/users`, {
      body: { email: 'auto@example.com', firstName: 'Au', lastName: 'To', password: 'long-enough-1' },
    });
    expect(created.status, created.text).to.equal(201);
    expect(
      (await anonymous('GET', `${fx.gw.baseUrl}/api/status`)).text,
      'hand-written entries still reachable',
    ).to.equal('up');

    await bulk.stop();
    fx.running.pop();
    await eventually(async () => {
      if (!generated().includes('contracts-get-api-users-userid')) throw new Error('still the table');
    }, 8000);
    const got = await eventually(async () => {
      const r = await http('GET', `${fx.gw.baseUrl}/api/users/${created.body.userId as string}`);
      if (r.status !== 200) throw new Error(`still ${r.status}`);
      return r;
    }, 5000);
    expect(got.body.email).to.equal('auto@example.com');
    await eventually(async () => {
      const r = await http('GET', `${fx.gw.baseUrl}/api/bulk/items-0/x1`);
      if (r.status !== 404) throw new Error(`still ${r.status}`);
    }, 8000);
  });
});
