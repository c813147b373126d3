import { expect } from 'chai';
import { copyFileSync, cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parse } from 'yaml';
import { startGateway, eventually, type GatewayProcess } from '../support/gateway-process';
import { AMQP_URL } from '../support/env';
import { http, httpAs } from '../support/http';
import { AmqpTransport } from '../../plugin/bus/amqp';
import { serve, type RunningService } from '../../sdk';

const ROOT = resolve(__dirname, '..', '..', '..');

/**
 * An operator serves CreateOrderCommand through a pipeline of their own, stricter than the contract (a second
 * permission, a tighter schema), on a path of their own under /api; excludeFromGeneratedRoutes makes it the only way in.
 */
const GATEWAY_CONFIG = `http:
  port: \${PORT:-8080}
  hostname: \${HOST:-127.0.0.1}

apiEndpoints:
  checkout:
    host: '*'
    paths: ['/api/checkout']
    methods: [POST]

policies: [jwt-dev-auth, permission, schema-validation, contract-router]

pipelines:
  checkout:
    apiEndpoints: [checkout]
    policies:
      - jwt-dev-auth:
      - permission:
          - action: { required: ['orders:create', 'orders:approved'] }
      - schema-validation:
          - action:
              schema:
                type: object
                properties:
                  sku: { type: string }
                  quantity: { type: integer, minimum: 1, maximum: 10 }
                required: [sku, quantity]
      - contract-router:
          - action: { messageType: CreateOrderCommand }
`;

describe('excludeFromGeneratedRoutes: a hand-written pipeline is the only way to a contract', function () {
  this.timeout(60000);
  let gw: GatewayProcess | undefined;
  let configDir: string;
  let transport: AmqpTransport | undefined;
  let orders: RunningService | undefined;
  const created: unknown[] = [];
  const reached: string[] = [];

  before(async () => {
    configDir = mkdtempSync(join(tmpdir(), 'contracts-exclude-'));
    copyFileSync(join(ROOT, 'config', 'system.config.yml'), join(configDir, 'system.config.yml'));
    cpSync(join(ROOT, 'config', 'models'), join(configDir, 'models'), { recursive: true });
    writeFileSync(join(configDir, 'gateway.config.yml'), GATEWAY_CONFIG);
    gw = await startGateway(
      {
        BUS_URL: AMQP_URL,
        START_REFERENCE_SERVICES: 'false',
        CONTRACT_ROUTING: 'endpoints',
        EXCLUDE_FROM_GENERATED_ROUTES: 'CreateOrderCommand, ApproveOrderCommand,OrderStatsQuery',
      },
      { configDir },
    );
    transport = new AmqpTransport(AMQP_URL, { prefix: gw.prefix });
    await transport.start();
    orders = await serve({
      transport,
      service: 'orders-service',
      operations: [
        {
          contract: {
            messageType: 'CreateOrderCommand',
            inputSchema: {
              type: 'object',
              properties: { sku: { type: 'string' }, quantity: { type: 'integer' } },
              required: ['sku'],
            },
            outputSchema: { type: 'object' },
            requiredPermissions: ['orders:create'],
          },
          handle: async (input) => {
            created.push(input);
            return { orderId: `o-${created.length}`, ...input };
          },
        },
        // ApproveOrderCommand (POST /api/approve-order, POST /api/actions) and OrderStatsQuery (GET /api/data) are
        // excluded too; RefundOrderCommand and SalesReportQuery keep the same generic routes.
        ...['ApproveOrderCommand', 'OrderStatsQuery', 'RefundOrderCommand', 'SalesReportQuery'].map((messageType) => ({
          contract: {
            messageType,
            inputSchema: { type: 'object' },
            outputSchema: { type: 'object' },
            requiredPermissions: [],
          },
          handle: async () => {
            reached.push(messageType);
            return { messageType };
          },
        })),
        {
          contract: {
            messageType: 'GetOrderQuery',
            inputSchema: { type: 'object', properties: { orderId: { type: 'string' } }, required: ['orderId'] },
            outputSchema: { type: 'object' },
            requiredPermissions: [],
          },
          handle: async (input) => ({ orderId: input.orderId }),
        },
      ],
    });
    // GetOrderQuery keeps its generated route: once it answers, the gateway has heard the announcement.
    await eventually(async () => {
      const r = await httpAs([])('GET', `${gw!.baseUrl}/api/orders/o-9`);
      expect(r.status).to.equal(200);
    }, 20000);
  });

  after(async () => {
    await orders?.stop();
    await transport?.close();
    await gw?.stop();
    rmSync(configDir, { recursive: true, force: true });
  });

  it('writes no generated route for the excluded contracts, and keeps the others', () => {
    const config = parse(gw!.gatewayConfig());
    const generated = JSON.stringify(
      Object.entries(config.apiEndpoints).filter(([name]) => name.startsWith('contracts-')),
    );
    for (const kept of ['GetOrderQuery', 'RefundOrderCommand', 'SalesReportQuery']) expect(generated).to.include(kept);
    for (const excluded of ['CreateOrderCommand', 'ApproveOrderCommand', 'OrderStatsQuery'])
      expect(generated).to.not.include(excluded);
  });

  it('answers the generated routes and the generic dispatch 404 HANDLER_NOT_FOUND, and nothing reaches the service', async () => {
    const as = httpAs(['orders:create', 'orders:approved']);
    const before = created.length;
    const answers = [
      await as('POST', `${gw!.baseUrl}/api/orders`, { body: { sku: 'A-1', quantity: 2 } }),
      await as('POST', `${gw!.baseUrl}/api/approve-order`, { body: {} }),
      await as('POST', `${gw!.baseUrl}/api/actions`, { body: { messageType: 'ApproveOrderCommand', input: {} } }),
      await as('POST', `${gw!.baseUrl}/api/actions`, {
        body: { messageType: 'CreateOrderCommand', input: { sku: 'A-1', quantity: 2 } },
      }),
      await as('GET', `${gw!.baseUrl}/api/data?messageType=OrderStatsQuery`),
    ];
    for (const answer of answers) {
      expect(answer.status).to.equal(404);
      expect(answer.body).to.include({ code: 'HANDLER_NOT_FOUND' });
    }
    expect(created.length).to.equal(before);
    expect(reached).to.deep.equal([]);
    // The generic routes still serve the contracts that keep their routes.
    const refund = await as('POST', `${gw!.baseUrl}/api/actions`, {
      body: { messageType: 'RefundOrderCommand', input: {} },
    });
    expect(refund.status).to.equal(200);
    const report = await as('GET', `${gw!.baseUrl}/api/data?messageType=SalesReportQuery`);
    expect(report.status).to.equal(200);
    expect(reached).to.deep.equal(['RefundOrderCommand', 'SalesReportQuery']);
  });

  it('serves the contract through the hand-written pipeline, with its stricter steps', async () => {
    const before = created.length;
    const anonymous = await http('POST', `${gw!.baseUrl}/api/checkout`, { body: { sku: 'A-1', quantity: 2 } });
    expect(anonymous.status).to.equal(401);
    const contractOnly = await httpAs(['orders:create'])('POST', `${gw!.baseUrl}/api/checkout`, {
      body: { sku: 'A-1', quantity: 2 },
    });
    expect(contractOnly.status).to.equal(403);
    expect(contractOnly.body).to.include({ code: 'INSUFFICIENT_PERMISSIONS', requiredPermission: 'orders:approved' });
    const as = httpAs(['orders:create', 'orders:approved']);
    const tooMany = await as('POST', `${gw!.baseUrl}/api/checkout`, { body: { sku: 'A-1', quantity: 11 } });
    expect(tooMany.status).to.equal(400);
    expect(tooMany.body.details).to.have.property('quantity');
    expect(created.length).to.equal(before);

    const ok = await as('POST', `${gw!.baseUrl}/api/checkout`, { body: { sku: 'A-1', quantity: 2 } });
    expect(ok.status).to.equal(201);
    expect(ok.body).to.include({ sku: 'A-1', quantity: 2 });
    expect(created.at(-1)).to.deep.equal({ sku: 'A-1', quantity: 2 });
  });

  it('lists the excluded contract in discovery with no generated route', async () => {
    const r = await httpAs([])('GET', `${gw!.baseUrl}/api/discovery/contracts`);
    expect(r.status).to.equal(200);
    const byType = new Map(
      (r.body.contracts as Array<{ messageType: string; endpoints: unknown[] }>).map((c) => [c.messageType, c]),
    );
    expect(byType.get('CreateOrderCommand')?.endpoints).to.deep.equal([]);
    expect(byType.get('GetOrderQuery')?.endpoints).to.have.length.above(0);
  });

  it('lists the hand-written route in the OpenAPI document with its path, method and security, and not the excluded routes', async () => {
    const r = await http('GET', `${gw!.baseUrl}/api-docs/openapi.json`);
    expect(r.status).to.equal(200);
    const checkout = r.body.paths['/api/checkout']?.post;
    expect(checkout).to.include({
      operationId: 'CreateOrderCommand',
      'x-message-type': 'CreateOrderCommand',
      'x-pipeline': 'checkout',
    });
    expect(checkout['x-required-permissions']).to.deep.equal(['orders:create', 'orders:approved']);
    expect(checkout.security).to.deep.include({ bearerAuth: [] });
    expect(checkout.requestBody.content['application/json'].schema).to.deep.equal({
      $ref: '#/components/schemas/pipeline.checkout.Input',
    });
    expect(r.body.components.schemas['pipeline.checkout.Input'].properties.quantity).to.include({ maximum: 10 });
    expect(r.body.paths['/api/orders']?.post).to.equal(undefined);
    expect(r.body.paths['/api/orders/{orderId}']?.get).to.include({ 'x-message-type': 'GetOrderQuery' });
  });
});
