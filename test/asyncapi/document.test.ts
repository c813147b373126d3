import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { Parser } from '@asyncapi/parser';
import { TypeScriptGenerator } from '@asyncapi/modelina';
import { buildAsyncApiDocument } from '../../plugin/asyncapi/document';
import { operationsRoutes } from '../../plugin/operations/register';
import type { Contract } from '../../plugin/contracts/types';
import { referenceContracts } from '../openapi/support';
import { testRuntime } from '../support/runtime';

/** A schema with local refs, which must point into the document once embedded. */
const withDefinitions: Contract = {
  messageType: 'PlaceOrderCommand',
  targetService: 'orders-service',
  inputSchema: {
    type: 'object',
    definitions: { line: { type: 'object', properties: { sku: { type: 'string' } } } },
    properties: { lines: { type: 'array', items: { $ref: '#/definitions/line' } } },
  },
  outputSchema: { type: 'object', properties: { orderId: { type: 'string' } } },
  requiredPermissions: ['orders:create'],
};

/** A cluster of three nodes with a user, a password, a vhost that needs escaping and query parameters. */
const CLUSTER_URL = [
  'amqp://bus-user-7f3:pw-9d2x@rabbit-0.rabbit:5672/shop%2Feu?heartbeat=17&locale=xx_QQ',
  'amqps://bus-user-7f3:pw-9d2x@rabbit-1.rabbit/shop%2Feu',
  'amqp://bus-user-7f3:pw-9d2x@[fd00::3]:5673/shop%2Feu',
].join(',');

/** Every amqp binding's exchange.vhost of the document's channels, by channel. */
function bindingVhosts(doc: Record<string, any>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(doc.channels as Record<string, any>).map(([name, ch]) => [name, ch.bindings.amqp.exchange.vhost]),
  );
}

/** The names of the models Modelina's TypeScript generator makes of an AsyncAPI document or a JSON schema. */
async function modelNames(input: Record<string, unknown>): Promise<string[]> {
  return (await new TypeScriptGenerator().generate(input)).map((m) => m.modelName);
}

/** The parser's diagnostics of severity error (0): none means a valid AsyncAPI document. */
async function errorsOf(document: unknown): Promise<string[]> {
  const diagnostics = await new Parser().validate(JSON.stringify(document));
  return diagnostics.filter((d) => d.severity === 0).map((d) => `${d.path.join('.')}: ${d.message}`);
}

describe('the AsyncAPI document of the bus', function () {
  this.timeout(60000);

  it('is a valid AsyncAPI 3.0 document for the reference services and a schema with local refs', async () => {
    const doc = buildAsyncApiDocument([...referenceContracts(), withDefinitions], 'contracts', CLUSTER_URL) as Record<
      string,
      any
    >;
    expect(Object.keys(doc.servers)).to.have.length(3);
    expect(await errorsOf(doc)).to.deep.equal([]);
    expect(doc.asyncapi).to.equal('3.0.0');
    // The check itself can fail: a reply that points at a channel the document lacks is an error.
    doc.operations['request.users-service'].reply.channel = { $ref: '#/channels/nowhere' };
    expect(await errorsOf(doc)).not.to.deep.equal([]);
  });

  it('has a request channel per service with each message type, its headers and the reply envelope', () => {
    const doc = buildAsyncApiDocument([...referenceContracts(), withDefinitions], 'acme', 'amqp://localhost') as Record<
      string,
      any
    >;
    const users = doc.channels['requests.users-service'];
    expect(users.address).to.equal('users-service');
    expect(users.bindings.amqp.exchange).to.include({ name: 'acme.requests', type: 'topic', durable: true });
    expect(users.messages.CreateUserCommand.bindings.amqp.messageType).to.equal('CreateUserCommand');
    expect(users.messages.CreateUserCommand.payload.$ref).to.equal('#/components/schemas/CreateUserCommand.Request');
    expect(doc.components.schemas['CreateUserCommand.Request'].properties.input.$ref).to.equal(
      '#/components/schemas/CreateUserCommand.Input',
    );
    expect(users.messages.CreateUserCommand.headers.$ref).to.equal('#/components/schemas/RequestHeaders');
    const op = doc.operations['request.users-service'];
    expect(op.action).to.equal('send');
    expect(op.reply.messages).to.deep.include({ $ref: '#/channels/replies/messages/CreateUserCommand.reply' });
    expect(doc.channels.replies.messages['CreateUserCommand.reply'].payload.$ref).to.equal(
      '#/components/schemas/CreateUserCommand.Reply',
    );
    const reply = doc.components.schemas['CreateUserCommand.Reply'].oneOf;
    expect(reply[0].$ref).to.equal('#/components/schemas/CreateUserCommand.ReplySuccess');
    expect(doc.components.schemas['CreateUserCommand.ReplySuccess'].properties.result.$ref).to.equal(
      '#/components/schemas/CreateUserCommand.Output',
    );
    expect(reply[1].$ref).to.equal('#/components/schemas/ReplyFailure');
    expect(doc.components.schemas.ReplyFailure.properties.error.properties.code.enum).to.include('NOT_FOUND');
    expect(doc.components.schemas['PlaceOrderCommand.Input'].properties.lines.items.$ref).to.equal(
      '#/components/schemas/PlaceOrderCommand.Input/definitions/line',
    );
    expect(doc.channels.announcements).to.include({ address: 'announce.{service}' });
    expect(doc.channels.announcements.bindings.amqp.exchange.name).to.equal('acme.announcements.{service}');
    expect(doc.channels.discovery.address).to.equal('discover');
  });

  it('with no contract is still valid (the exchanges, announcements and discovery)', async () => {
    expect(await errorsOf(buildAsyncApiDocument([], 'contracts', 'amqp://localhost'))).to.deep.equal([]);
    expect(await errorsOf(buildAsyncApiDocument([], 'contracts', 'embedded'))).to.deep.equal([]);
  });

  it("names a server per node of BUS_URL with its vhost, and none of the URL's credentials or query", () => {
    const doc = buildAsyncApiDocument(referenceContracts(), 'contracts', CLUSTER_URL) as Record<string, any>;
    expect(doc.servers).to.deep.equal({
      'broker-1': {
        host: 'rabbit-0.rabbit:5672',
        protocol: 'amqp',
        protocolVersion: '0-9-1',
        pathname: '/shop%2Feu',
        title: 'RabbitMQ node 1 of 3',
        description:
          'The broker, virtual host "shop/eu" (the pathname, URL-encoded). One node of a cluster: a client may connect to any of them.',
      },
      'broker-2': {
        host: 'rabbit-1.rabbit:5671',
        protocol: 'amqps',
        protocolVersion: '0-9-1',
        pathname: '/shop%2Feu',
        title: 'RabbitMQ node 2 of 3',
        description:
          'The broker, virtual host "shop/eu" (the pathname, URL-encoded). One node of a cluster: a client may connect to any of them.',
      },
      'broker-3': {
        host: '[fd00::3]:5673',
        protocol: 'amqp',
        protocolVersion: '0-9-1',
        pathname: '/shop%2Feu',
        title: 'RabbitMQ node 3 of 3',
        description:
          'The broker, virtual host "shop/eu" (the pathname, URL-encoded). One node of a cluster: a client may connect to any of them.',
      },
    });
    const text = JSON.stringify(doc);
    for (const secret of ['bus-user-7f3', 'pw-9d2x', 'heartbeat', 'xx_QQ']) expect(text).not.to.include(secret);
    // The bindings name the same vhost as the servers, on every channel.
    const vhosts = bindingVhosts(doc);
    expect(Object.keys(vhosts)).to.include.members(['requests.users-service', 'replies', 'announcements', 'discovery']);
    expect(new Set(Object.values(vhosts))).to.deep.equal(new Set(['shop/eu']));
  });

  it('names the default vhost "/" when BUS_URL gives none, and one server for one address', () => {
    const doc = buildAsyncApiDocument([], 'contracts', 'amqp://guest:guest@localhost') as Record<string, any>;
    expect(doc.servers).to.have.all.keys('broker');
    expect(doc.servers.broker).to.include({ host: 'localhost:5672', pathname: '/%2F', title: 'RabbitMQ' });
    expect(new Set(Object.values(bindingVhosts(doc)))).to.deep.equal(new Set(['/']));
  });

  it('for the embedded bus: no server and no vhost, and the description says why', () => {
    const doc = buildAsyncApiDocument(referenceContracts(), 'contracts', 'embedded') as Record<string, any>;
    expect(doc).not.to.have.property('servers');
    expect(new Set(Object.values(bindingVhosts(doc)))).to.deep.equal(new Set([undefined]));
    expect(doc.info.description).to.include('embedded bus').and.to.include('lists no server');
  });

  it('titles every payload and header schema after its message type, keeping nested titles unique', () => {
    const doc = buildAsyncApiDocument([...referenceContracts(), withDefinitions], 'contracts', 'embedded') as Record<
      string,
      any
    >;
    const schemas = doc.components.schemas as Record<string, any>;
    for (const [name, schema] of Object.entries(schemas)) expect(schema.title, name).to.equal(name);
    expect(schemas['GetUserQuery.Input'].title).to.equal('GetUserQuery.Input');
    expect(schemas['ListUsersQuery.Output'].properties.users.items.title).to.equal('ListUsersQuery.Output.users.Item');
    expect(schemas.ReplyFailure.properties.error.title).to.equal('ReplyFailure.error');
    expect(schemas['PlaceOrderCommand.Input'].definitions.line.title).to.equal('PlaceOrderCommand.Input.line');
    // A scalar becomes no model and gets no title; a title the contract gives a nested schema is kept.
    expect(schemas['GetUserQuery.Input'].properties.userId).not.to.have.property('title');
    const titled: Contract = {
      ...withDefinitions,
      messageType: 'TitledCommand',
      outputSchema: {
        type: 'object',
        properties: {
          a: { type: 'object', title: 'Money', properties: { cents: { type: 'integer' } } },
          b: { type: 'object', title: 'TitledCommand.Output.c' },
          c: { type: 'object' },
        },
      },
    };
    const out = (buildAsyncApiDocument([titled], 'contracts', 'embedded') as Record<string, any>).components.schemas[
      'TitledCommand.Output'
    ].properties;
    expect([out.a.title, out.b.title, out.c.title]).to.deep.equal([
      'Money',
      'TitledCommand.Output.c',
      'TitledCommand.Output.c_2',
    ]);
  });

  describe('GET /api-docs/asyncapi.json', () => {
    const runtime = testRuntime({ busPrefix: 'docs' });
    let server: Server;
    let base: string;
    before(async () => {
      const app = express();
      operationsRoutes(runtime)(app);
      server = createServer(app);
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    after(async () => {
      await new Promise<void>((r) => server.close(() => r()));
      await runtime.close();
    });

    it('serves the live document: a new contract appears, with an ETag that answers 304 until then', async () => {
      const first = await fetch(`${base}/api-docs/asyncapi.json`);
      expect(first.status).to.equal(200);
      expect(first.headers.get('content-type')).to.match(/^application\/json/);
      const etag = first.headers.get('etag')!;
      expect(((await first.json()) as Record<string, any>).channels).not.to.have.property('requests.orders-service');
      expect((await fetch(`${base}/api-docs/asyncapi.json`, { headers: { 'if-none-match': etag } })).status).to.equal(
        304,
      );

      runtime.discovery.registry.apply({
        service: 'orders-service',
        instanceId: 'o1',
        ttlMs: 60_000,
        contracts: [withDefinitions],
      });
      const changed = await fetch(`${base}/api-docs/asyncapi.json`, { headers: { 'if-none-match': etag } });
      expect(changed.status).to.equal(200);
      const doc = (await changed.json()) as Record<string, any>;
      expect(doc.channels['requests.orders-service'].bindings.amqp.exchange.name).to.equal('docs.requests');
      expect(await errorsOf(doc)).to.deep.equal([]);
    });
  });

  describe('the served document through Modelina', () => {
    // A gateway configured for a cluster (not started: the document needs no connection).
    const runtime = testRuntime({ busPrefix: 'docs', busUrl: CLUSTER_URL });
    let server: Server;
    let doc: Record<string, any>;
    before(async () => {
      const app = express();
      operationsRoutes(runtime)(app);
      server = createServer(app);
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      const byService = new Map<string, Contract[]>();
      for (const c of [...referenceContracts(), withDefinitions])
        byService.set(c.targetService, [...(byService.get(c.targetService) ?? []), c]);
      for (const [service, contracts] of byService)
        runtime.discovery.registry.apply({ service, instanceId: `${service}-1`, ttlMs: 60_000, contracts });
      const port = (server.address() as AddressInfo).port;
      doc = (await (await fetch(`http://127.0.0.1:${port}/api-docs/asyncapi.json`)).json()) as Record<string, any>;
    });
    after(async () => {
      await new Promise<void>((r) => server.close(() => r()));
      await runtime.close();
    });

    it('serves the servers of BUS_URL without its credentials', () => {
      expect(Object.values(doc.servers).map((s: any) => s.host)).to.deep.equal([
        'rabbit-0.rabbit:5672',
        'rabbit-1.rabbit:5671',
        '[fd00::3]:5673',
      ]);
      expect(JSON.stringify(doc)).not.to.include('pw-9d2x');
    });

    it('gives no anonymous model: each is named after its message type, the reply envelope and ReplyFailure', async () => {
      const names = await modelNames(doc);
      expect(names.filter((n) => /anonymous/i.test(n))).to.deep.equal([]);
      expect(names).to.include.members([
        'GetUserQueryDotRequest',
        'GetUserQueryDotInput',
        'GetUserQueryDotOutput',
        'GetUserQueryDotReply',
        'GetUserQueryDotReplySuccess',
        'ReplyFailure',
        'ReplyFailureDotError',
        'ListUsersQueryDotOutputDotUsersDotItem',
        'PlaceOrderCommandDotInputDotLine',
        'Announcement',
        'Contract',
        'DiscoveryRequest',
      ]);
    });

    it('the check can fail: a nested object without a title is an anonymous model', async () => {
      const untitled = structuredClone(doc);
      delete untitled.components.schemas.ReplyFailure.properties.error.title;
      expect((await modelNames(untitled)).filter((n) => /anonymous/i.test(n))).to.have.length(1);
    });

    it('the request headers of every message are one model, RequestHeaders', async () => {
      const { document } = await new Parser().parse(JSON.stringify(doc));
      const headers = document!
        .allMessages()
        .all()
        .map((m) => m.headers())
        .filter((h) => h !== undefined);
      const requests = Object.entries(doc.channels as Record<string, any>)
        .filter(([name]) => name.startsWith('requests.'))
        .flatMap(([, channel]) => Object.keys(channel.messages));
      expect(headers).to.have.length(requests.length).and.to.have.length.above(8);
      const names = new Set<string>();
      for (const h of headers)
        for (const name of await modelNames(h.json() as Record<string, unknown>)) names.add(name);
      expect([...names]).to.deep.equal(['RequestHeaders']);
    });
  });
});
