import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { Parser } from '@asyncapi/parser';
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

/** The parser's diagnostics of severity error (0): none means a valid AsyncAPI document. */
async function errorsOf(document: unknown): Promise<string[]> {
  const diagnostics = await new Parser().validate(JSON.stringify(document));
  return diagnostics.filter((d) => d.severity === 0).map((d) => `${d.path.join('.')}: ${d.message}`);
}

describe('the AsyncAPI document of the bus', function () {
  this.timeout(60000);

  it('is a valid AsyncAPI 3.0 document for the reference services and a schema with local refs', async () => {
    const doc = buildAsyncApiDocument([...referenceContracts(), withDefinitions], 'contracts') as Record<string, any>;
    expect(await errorsOf(doc)).to.deep.equal([]);
    expect(doc.asyncapi).to.equal('3.0.0');
    // The check itself can fail: a reply that points at a channel the document lacks is an error.
    doc.operations['request.users-service'].reply.channel = { $ref: '#/channels/nowhere' };
    expect(await errorsOf(doc)).not.to.deep.equal([]);
  });

  it('has a request channel per service with each message type, its headers and the reply envelope', () => {
    const doc = buildAsyncApiDocument([...referenceContracts(), withDefinitions], 'acme') as Record<string, any>;
    const users = doc.channels['requests.users-service'];
    expect(users.address).to.equal('users-service');
    expect(users.bindings.amqp.exchange).to.include({ name: 'acme.requests', type: 'topic', durable: true });
    expect(users.messages.CreateUserCommand.bindings.amqp.messageType).to.equal('CreateUserCommand');
    expect(users.messages.CreateUserCommand.payload.properties.input.$ref).to.equal(
      '#/components/schemas/CreateUserCommand.Input',
    );
    expect(users.messages.CreateUserCommand.headers.$ref).to.equal('#/components/schemas/RequestHeaders');
    const op = doc.operations['request.users-service'];
    expect(op.action).to.equal('send');
    expect(op.reply.messages).to.deep.include({ $ref: '#/channels/replies/messages/CreateUserCommand.reply' });
    const reply = doc.channels.replies.messages['CreateUserCommand.reply'].payload.oneOf;
    expect(reply[0].properties.result.$ref).to.equal('#/components/schemas/CreateUserCommand.Output');
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
    expect(await errorsOf(buildAsyncApiDocument([], 'contracts'))).to.deep.equal([]);
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

      runtime.registry.apply({
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
});
