import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { parse } from 'yaml';
import { configDirWithGateway } from '../support/config-dir';
import { userWithWriteOnly } from '../validation/fixtures';
import { startGateway, eventually, type GatewayProcess } from '../support/gateway-process';
import { httpAs, type HttpResult } from '../support/http';

/** Authenticated as an administrator: validation runs after authentication and permissions. */
const http = httpAs(['admin:all']);
import { AMQP_URL } from '../support/env';
import { AmqpTransport } from '../../plugin/bus/amqp';
import { serve, ServiceError, type Operation, type RunningService } from '../../sdk';

/** Every error answer is the error body. */
function expectErrorBody(res: HttpResult, status: number, code: string): void {
  expect(res.status, res.text).to.equal(status);
  expect(res.headers.get('content-type')).to.match(/^application\/json/);
  expect(res.body).to.include({ code });
  expect(res.body.error).to.be.a('string');
  expect(res.body.message).to.be.a('string');
  expect(res.body.timestamp).to.be.a('string');
  expect(res.body.correlationId).to.equal(res.headers.get('x-correlation-id'));
  expect(res.text).not.to.match(/SyntaxError|Unexpected token|node_modules|ajv|\bat \w+ \(/);
}

describe('validation through Express Gateway on the embedded bus (users service)', () => {
  let gw: GatewayProcess;
  let api: string;

  before(async () => {
    gw = await startGateway({ BUS_URL: 'embedded' });
    api = `${gw.baseUrl}/api`;
  });
  after(async () => gw?.stop());

  it('puts schema-validation right before contract-router in every generated pipeline', () => {
    const cfg = parse(gw.gatewayConfig());
    const pipelines = Object.entries(cfg.pipelines as Record<string, { policies: Array<Record<string, unknown>> }>)
      // Contract pipelines only: the generated preflight and not-found catch-all pipelines route no contract.
      .filter(([name, p]) => name.startsWith('contracts-') && p.policies.some((step) => 'contract-router' in step));
    expect(pipelines).not.to.be.empty;
    for (const [, p] of pipelines) {
      const names = p.policies.map((step) => Object.keys(step)[0]);
      expect(names.slice(-2)).to.deep.equal(['schema-validation', 'contract-router']);
    }
    expect(cfg.policies).to.include('schema-validation');
  });

  it('a short password and empty profile.firstName → 400 VALIDATION_ERROR naming both, nothing created', async () => {
    const res = await http('POST', `${api}/users`, {
      body: { email: 'spec@example.com', password: 'short', profile: { firstName: '' } },
    });
    expectErrorBody(res, 400, 'VALIDATION_ERROR');
    expect(res.body.error).to.equal('Validation failed');
    expect(res.body.details).to.deep.equal({
      password: 'must be at least 8 characters long',
      'profile.firstName': 'must not be empty',
    });
    expect(res.body.validationErrors).to.deep.equal([
      { field: 'password', message: 'must be at least 8 characters long' },
      { field: 'profile.firstName', message: 'must not be empty' },
    ]);
    const list = await http('GET', `${api}/users?search=spec@example.com`);
    expect(list.body.totalCount).to.equal(0);
  });

  it('a single missing required field → 400 MISSING_REQUIRED_FIELD', async () => {
    const res = await http('POST', `${api}/users`, { body: { firstName: 'Nobody' } });
    expectErrorBody(res, 400, 'MISSING_REQUIRED_FIELD');
    expect(res.body.details).to.deep.equal({ email: 'is required' });
    expect(res.body.validationErrors).to.deep.equal([{ field: 'email', message: 'is required' }]);
  });

  it('a single bad format → 400 INVALID_FORMAT', async () => {
    const res = await http('POST', `${api}/users`, { body: { email: 'not-an-email' } });
    expectErrorBody(res, 400, 'INVALID_FORMAT');
    expect(res.body.details).to.deep.equal({ email: 'must be a valid email address' });
  });

  it('a single wrong type → 400 INVALID_TYPE, in the body and in the query string', async () => {
    const body = await http('POST', `${api}/users`, { body: { email: 'type@example.com', firstName: 42 } });
    expectErrorBody(body, 400, 'INVALID_TYPE');
    expect(body.body.validationErrors).to.deep.equal([{ field: 'firstName', message: 'must be a string' }]);
    const query = await http('GET', `${api}/users?page=two`);
    expectErrorBody(query, 400, 'INVALID_TYPE');
    expect(query.body.details).to.deep.equal({ page: 'must be an integer' });
  });

  it('path parameters win: a body field that contradicts the path is a 400, a matching one passes', async () => {
    const created = await http('POST', `${api}/users`, {
      body: { email: 'path@example.com', password: 'long-enough' },
    });
    expect(created.status, created.text).to.equal(201);
    const id = created.body.userId as string;
    const conflict = await http('PUT', `${api}/users/${id}`, { body: { userId: 'someone-else', firstName: 'X' } });
    expectErrorBody(conflict, 400, 'VALIDATION_ERROR');
    expect(conflict.body.validationErrors).to.deep.equal([
      { field: 'userId', message: 'must match the path parameter' },
    ]);
    const same = await http('PUT', `${api}/users/${id}`, { body: { userId: id, firstName: 'Same' } });
    expect(same.status, same.text).to.equal(200);
    expect(same.body).to.include({ userId: id, firstName: 'Same' });
  });

  it('a malformed JSON body → 400 BAD_REQUEST in the error body', async () => {
    const res = await http('POST', `${api}/users`, {
      body: '{"email": "a@b.c",',
      headers: { 'content-type': 'application/json' },
    });
    expectErrorBody(res, 400, 'BAD_REQUEST');
  });
});

/** A config directory with hand-written pipelines that use schema-validation with an inline schema. */
function handWrittenConfigDir(): string {
  return configDirWithGateway(
    `http:
  port: \${PORT:-8080}
  hostname: 127.0.0.1

apiEndpoints:
  hand-gadgets:
    host: '*'
    paths: ['/hand/gadgets']
    methods: ['POST']
  hand-check:
    host: '*'
    paths: ['/hand/check']

serviceEndpoints: {}

policies:
  - terminate
  - schema-validation
  - contract-router

pipelines:
  # A stricter schema than the contract's, in front of a contract.
  hand-gadgets:
    apiEndpoints: [hand-gadgets]
    policies:
      - schema-validation:
          - action:
              messageType: CreateGadgetCommand
              schema:
                type: object
                properties:
                  name: { type: string, minLength: 1 }
                  size: { type: integer, minimum: 1 }
                required: [name, size]
      # public: no authentication step here, so the router does not ask for a caller (fail-closed otherwise).
      - contract-router:
          - action:
              messageType: CreateGadgetCommand
              public: true
  # No contract at all: the inline schema alone guards the route.
  hand-check:
    apiEndpoints: [hand-check]
    policies:
      - schema-validation:
          - action:
              schema:
                type: object
                properties:
                  q: { type: integer, maximum: 10 }
                required: [q]
      - terminate:
          - action:
              statusCode: 200
              message: checked
`,
    'contracts-validation-',
  );
}

const SERVICE = 'validation-test-service';
const user = { ...userWithWriteOnly, required: ['id'] };

/** The test service: records what reaches it, so the tests can tell what never did. */
function testService() {
  const received: Array<Record<string, unknown>> = [];
  const calls = { gadgets: 0, broken: 0 };
  const leaky = (id: string) => ({ id, password: `pw-${id}`, profile: { firstName: `F-${id}`, pin: '1234' } });
  const operations: Operation[] = [
    {
      contract: {
        messageType: 'CreateGadgetCommand',
        requiredPermissions: [],
        inputSchema: {
          type: 'object',
          properties: {
            name: { type: 'string', minLength: 1 },
            size: { type: 'integer' },
            email: { type: 'string', format: 'email' },
            tags: { type: 'array', items: { type: 'string' } },
            meta: { type: 'object' },
          },
          required: ['name'],
          additionalProperties: false,
        },
        outputSchema: { type: 'object', properties: { gadgetId: { type: 'string' } }, required: ['gadgetId'] },
      },
      handle: (input) => {
        calls.gadgets += 1;
        received.push(input);
        return { gadgetId: `g${calls.gadgets}`, name: input.name };
      },
    },
    {
      contract: {
        messageType: 'UpdateGadgetCommand',
        requiredPermissions: [],
        inputSchema: {
          type: 'object',
          properties: { gadgetId: { type: 'string' }, name: { type: 'string' } },
          required: ['gadgetId'],
        },
        outputSchema: { type: 'object' },
      },
      handle: (input) => {
        calls.gadgets += 1;
        return { gadgetId: input.gadgetId, name: input.name };
      },
    },
    {
      contract: {
        messageType: 'ListGadgetsQuery',
        requiredPermissions: [],
        inputSchema: {
          type: 'object',
          properties: {
            page: { type: 'integer', minimum: 1, default: 1 },
            pageSize: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
            tags: { type: 'array', items: { type: 'string' } },
            active: { type: 'boolean' },
          },
        },
        outputSchema: { type: 'object' },
      },
      handle: (input) => ({ received: input }),
    },
    {
      contract: {
        messageType: 'CreateBrokenThingCommand',
        requiredPermissions: [],
        inputSchema: { type: 'object', properties: { x: { type: 'strnig' } } },
        outputSchema: { type: 'object' },
      },
      handle: () => {
        calls.broken += 1;
        return {};
      },
    },
    {
      contract: {
        messageType: 'GetLeakyUserQuery',
        requiredPermissions: [],
        inputSchema: { type: 'object', properties: { leakyUserId: { type: 'string' } }, required: ['leakyUserId'] },
        outputSchema: user,
      },
      handle: (input) => leaky(String(input.leakyUserId)),
    },
    {
      contract: {
        messageType: 'ListLeakyUsersQuery',
        requiredPermissions: [],
        // 2020-12: dependentRequired is only a keyword in that dialect.
        inputSchema: {
          $schema: 'https://json-schema.org/draft/2020-12/schema',
          type: 'object',
          properties: { sort: { type: 'string' }, order: { enum: ['asc', 'desc'] } },
          dependentRequired: { order: ['sort'] },
        },
        outputSchema: {
          $schema: 'https://json-schema.org/draft/2020-12/schema',
          type: 'object',
          properties: { users: { type: 'array', items: { $ref: '#/$defs/user' } }, totalCount: { type: 'integer' } },
          required: ['users'],
          $defs: { user },
        },
      },
      handle: () => ({ users: [leaky('a'), leaky('b')], totalCount: 2 }),
    },
    {
      contract: {
        messageType: 'GetOddThingQuery',
        requiredPermissions: [],
        inputSchema: { type: 'object', properties: { oddThingId: { type: 'string' } } },
        outputSchema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
      },
      handle: () => ({ id: 5, note: 'id should be a string' }),
    },
    {
      contract: {
        messageType: 'CreateBookingCommand',
        requiredPermissions: [],
        inputSchema: { type: 'object', properties: { startDate: { type: 'string', format: 'date' } } },
        outputSchema: { type: 'object' },
      },
      handle: () => {
        throw new ServiceError('VALIDATION_ERROR', 'The booking breaks a business rule', {
          status: 422,
          validationErrors: [{ field: 'startDate', message: 'must be a weekday' }],
        });
      },
    },
  ];
  return { received, calls, operations };
}

describe('validation through Express Gateway and RabbitMQ (test services)', () => {
  const BODY_LIMIT = 2048;
  let gw: GatewayProcess;
  let strict: GatewayProcess;
  let configDir: string;
  const transports: AmqpTransport[] = [];
  const running: RunningService[] = [];
  const svc = testService();

  async function attach(prefix: string): Promise<void> {
    const transport = new AmqpTransport(AMQP_URL, { prefix });
    await transport.start();
    transports.push(transport);
    running.push(await serve({ transport, service: SERVICE, ttlMs: 60000, operations: svc.operations }));
  }

  before(async () => {
    configDir = handWrittenConfigDir();
    const common = { BUS_URL: AMQP_URL, START_REFERENCE_SERVICES: 'false' };
    [gw, strict] = await Promise.all([
      startGateway({ ...common, BODY_LIMIT_BYTES: String(BODY_LIMIT) }, { configDir }),
      startGateway({ ...common, STRICT_OUTPUT: 'true' }),
    ]);
    await Promise.all([attach(gw.prefix), attach(strict.prefix)]);
    // Routes are written after discovery; wait until the last contract's route is served on both.
    for (const g of [gw, strict]) {
      await eventually(async () => {
        const res = await http('GET', `${g.baseUrl}/api/odd-things/o1`);
        expect(res.status, res.text).to.be.oneOf([200, 502]);
      });
    }
  });
  after(async () => {
    for (const s of running) await s.stop();
    for (const t of transports) await t.close();
    await gw?.stop();
    await strict?.stop();
    rmSync(configDir, { recursive: true, force: true });
  });

  /** Runs `fn` and checks that the gadget handlers were not called meanwhile. */
  async function nothingReachesTheBus(fn: () => Promise<void>): Promise<void> {
    const before = svc.calls.gadgets;
    await fn();
    expect(svc.calls.gadgets, 'a refused request reached the service').to.equal(before);
  }

  describe('input', () => {
    it('refuses a field additionalProperties: false excludes with 400 naming it, instead of dropping it', async () => {
      await nothingReachesTheBus(async () => {
        const res = await http('POST', `${gw.baseUrl}/api/gadgets`, { body: { name: 'gear', colour: 'red' } });
        expectErrorBody(res, 400, 'VALIDATION_ERROR');
        expect(res.body.details).to.deep.equal({ colour: 'is not allowed' });
        expect(res.body.validationErrors).to.deep.equal([{ field: 'colour', message: 'is not allowed' }]);
      });
    });

    it('MISSING_REQUIRED_FIELD, INVALID_TYPE and INVALID_FORMAT never reach the service', async () => {
      await nothingReachesTheBus(async () => {
        expectErrorBody(
          await http('POST', `${gw.baseUrl}/api/gadgets`, { body: { size: 1 } }),
          400,
          'MISSING_REQUIRED_FIELD',
        );
        expectErrorBody(
          await http('POST', `${gw.baseUrl}/api/gadgets`, { body: { name: 'gear', size: '3' } }),
          400,
          'INVALID_TYPE',
        );
        expectErrorBody(
          await http('POST', `${gw.baseUrl}/api/gadgets`, { body: { name: 'gear', email: 'nope' } }),
          400,
          'INVALID_FORMAT',
        );
      });
    });

    it('passes valid input on unchanged', async () => {
      const res = await http('POST', `${gw.baseUrl}/api/gadgets`, {
        body: { name: 'gear', size: 3, email: 'a@example.com', tags: ['x'] },
      });
      expect(res.status, res.text).to.equal(201);
      expect(svc.received.at(-1)).to.deep.equal({ name: 'gear', size: 3, email: 'a@example.com', tags: ['x'] });
    });

    it('converts query strings by the schema, builds arrays, fills defaults', async () => {
      const res = await http('GET', `${gw.baseUrl}/api/gadgets?page=2&active=true&tags=a,b`);
      expect(res.status, res.text).to.equal(200);
      expect(res.body.received).to.deep.equal({ page: 2, pageSize: 20, active: true, tags: ['a', 'b'] });
      const repeated = await http('GET', `${gw.baseUrl}/api/gadgets?tags=a&tags=b`);
      expect(repeated.body.received).to.deep.equal({ page: 1, pageSize: 20, tags: ['a', 'b'] });
      expectErrorBody(await http('GET', `${gw.baseUrl}/api/gadgets?active=maybe`), 400, 'INVALID_TYPE');
      const big = await http('GET', `${gw.baseUrl}/api/gadgets?pageSize=101`);
      expectErrorBody(big, 400, 'VALIDATION_ERROR');
      expect(big.body.details).to.deep.equal({ pageSize: 'must be less than or equal to 100' });
    });

    it('uses the 2020-12 dialect when the schema says so', async () => {
      const res = await http('GET', `${gw.baseUrl}/api/leaky-users?order=desc`);
      expectErrorBody(res, 400, 'MISSING_REQUIRED_FIELD');
      expect(res.body.details).to.deep.equal({ sort: 'is required when order is present' });
      expect((await http('GET', `${gw.baseUrl}/api/leaky-users?order=desc&sort=id`)).status).to.equal(200);
    });

    it('path parameters win over the body; a contradicting body value is a 400 that never reaches the service', async () => {
      await nothingReachesTheBus(async () => {
        const res = await http('PUT', `${gw.baseUrl}/api/gadgets/g1`, { body: { gadgetId: 'g2', name: 'x' } });
        expectErrorBody(res, 400, 'VALIDATION_ERROR');
        expect(res.body.details).to.deep.equal({ gadgetId: 'must match the path parameter' });
      });
      const same = await http('PUT', `${gw.baseUrl}/api/gadgets/g1`, { body: { gadgetId: 'g1', name: 'x' } });
      expect(same.status, same.text).to.equal(200);
      expect(same.body).to.deep.equal({ gadgetId: 'g1', name: 'x' });
    });

    it('a contract whose schema does not compile: logged at discovery, its route answers 500 without the ajv message', async () => {
      expect(gw.output()).to.match(/CreateBrokenThingCommand: its inputSchema does not compile/);
      const res = await http('POST', `${gw.baseUrl}/api/broken-things`, { body: { x: 'y' } });
      expectErrorBody(res, 500, 'INTERNAL_ERROR');
      expect(res.text).not.to.match(/strnig|schema is invalid|must be equal to one of/);
      expect(svc.calls.broken).to.equal(0);
      // The rest of the gateway is unaffected.
      expect((await http('GET', `${gw.baseUrl}/api/gadgets`)).status).to.equal(200);
    });

    it('passes a service’s 422 business-rule rejection on with its validationErrors', async () => {
      const res = await http('POST', `${gw.baseUrl}/api/bookings`, { body: { startDate: '2030-01-05' } });
      expectErrorBody(res, 422, 'VALIDATION_ERROR');
      expect(res.body).to.include({ error: 'Validation failed', message: 'The booking breaks a business rule' });
      expect(res.body.validationErrors).to.deep.equal([{ field: 'startDate', message: 'must be a weekday' }]);
    });
  });

  describe('hand-written pipelines with an inline schema', () => {
    it('validates against the inline schema in front of a contract', async () => {
      await nothingReachesTheBus(async () => {
        const res = await eventually(async () => {
          const r = await http('POST', `${gw.baseUrl}/hand/gadgets`, { body: { name: 'gear' } });
          expect(r.status, r.text).to.equal(400);
          return r;
        });
        expectErrorBody(res, 400, 'MISSING_REQUIRED_FIELD');
        expect(res.body.details).to.deep.equal({ size: 'is required' });
      });
      const ok = await http('POST', `${gw.baseUrl}/hand/gadgets`, { body: { name: 'gear', size: 2 } });
      expect(ok.status, ok.text).to.equal(201);
      expect(svc.received.at(-1)).to.deep.equal({ name: 'gear', size: 2 });
    });

    it('guards a route with no contract at all', async () => {
      const ok = await http('GET', `${gw.baseUrl}/hand/check?q=3`);
      expect(ok.status, ok.text).to.equal(200);
      expect(ok.text).to.equal('checked');
      expectErrorBody(await http('GET', `${gw.baseUrl}/hand/check`), 400, 'MISSING_REQUIRED_FIELD');
      expectErrorBody(await http('GET', `${gw.baseUrl}/hand/check?q=11`), 400, 'VALIDATION_ERROR');
    });
  });

  describe('body hygiene (nothing reaches the bus)', () => {
    it('malformed JSON → 400 BAD_REQUEST', async () => {
      await nothingReachesTheBus(async () => {
        const res = await http('POST', `${gw.baseUrl}/api/gadgets`, {
          body: '{"name": "gear", ',
          headers: { 'content-type': 'application/json' },
        });
        expectErrorBody(res, 400, 'BAD_REQUEST');
      });
    });

    it('Content-Type: text/plain on POST and PUT → 415', async () => {
      await nothingReachesTheBus(async () => {
        const post = await http('POST', `${gw.baseUrl}/api/gadgets`, {
          body: '{"name":"gear"}',
          headers: { 'content-type': 'text/plain' },
        });
        expectErrorBody(post, 415, 'UNSUPPORTED_MEDIA_TYPE');
        const put = await http('PUT', `${gw.baseUrl}/api/gadgets/g1`, {
          body: '{"name":"gear"}',
          headers: { 'content-type': 'text/plain' },
        });
        expectErrorBody(put, 415, 'UNSUPPORTED_MEDIA_TYPE');
      });
    });

    it(`a body over BODY_LIMIT_BYTES (${BODY_LIMIT}) → 413`, async () => {
      await nothingReachesTheBus(async () => {
        const res = await http('POST', `${gw.baseUrl}/api/gadgets`, { body: { name: 'x'.repeat(BODY_LIMIT * 2) } });
        expectErrorBody(res, 413, 'PAYLOAD_TOO_LARGE');
      });
    });

    it('__proto__ and constructor.prototype cannot pollute: the service receives no such key, the gateway keeps working', async () => {
      const proto = await http('POST', `${gw.baseUrl}/api/gadgets`, {
        body: '{"name":"p1","__proto__":{"polluted":true},"meta":{"ok":1,"__proto__":{"polluted":true}}}',
      });
      expect(proto.status, proto.text).to.equal(201);
      const first = svc.received.at(-1)!;
      expect(Object.keys(first)).to.deep.equal(['name', 'meta']);
      expect(Object.hasOwn(first, '__proto__')).to.equal(false);
      expect(Object.keys(first.meta as object)).to.deep.equal(['ok']);

      const ctor = await http('POST', `${gw.baseUrl}/api/gadgets`, {
        body: '{"name":"p2","constructor":{"prototype":{"polluted":true}},"meta":{"constructor":{"prototype":{"polluted":true}}}}',
      });
      expect(ctor.status, ctor.text).to.equal(201);
      const second = svc.received.at(-1)!;
      expect(second).to.deep.equal({ name: 'p2', meta: {} });
      expect(Object.hasOwn(second, 'constructor')).to.equal(false);
      expect(({} as Record<string, unknown>).polluted).to.equal(undefined);

      // Still working, and no polluted property shows up in what the gateway builds next.
      const after = await http('GET', `${gw.baseUrl}/api/gadgets?page=1`);
      expect(after.status).to.equal(200);
      expect(after.body.received).to.deep.equal({ page: 1, pageSize: 20 });
      expect(after.text).not.to.contain('polluted');
    });
  });

  describe('output', () => {
    it('never returns writeOnly fields, also nested and in the items of a list envelope', async () => {
      for (const g of [gw, strict]) {
        const one = await http('GET', `${g.baseUrl}/api/leaky-users/u1`);
        expect(one.status, one.text).to.equal(200);
        expect(one.body).to.deep.equal({ id: 'u1', profile: { firstName: 'F-u1' } });
        const list = await http('GET', `${g.baseUrl}/api/leaky-users`);
        expect(list.status, list.text).to.equal(200);
        expect(list.body).to.deep.equal({
          users: [
            { id: 'a', profile: { firstName: 'F-a' } },
            { id: 'b', profile: { firstName: 'F-b' } },
          ],
          totalCount: 2,
        });
        expect(list.text).not.to.match(/password|pw-|pin|1234/);
      }
    });

    it('a result that does not match the outputSchema is logged with the correlation id and passed on', async () => {
      const res = await http('GET', `${gw.baseUrl}/api/odd-things/o1`, {
        headers: { 'X-Correlation-Id': 'odd-output-1' },
      });
      expect(res.status, res.text).to.equal(200);
      expect(res.body).to.deep.equal({ id: 5, note: 'id should be a string' });
      await eventually(async () => {
        expect(gw.output()).to.match(
          /\[odd-output-1\] validation-test-service answered GetOddThingQuery with a result that does not match its outputSchema: id must be a string/,
        );
      }, 3000);
    });

    it('in strict mode (STRICT_OUTPUT=true) it is a 502 SERVICE_UNAVAILABLE naming the service', async () => {
      const res = await http('GET', `${strict.baseUrl}/api/odd-things/o1`, {
        headers: { 'X-Correlation-Id': 'odd-output-2' },
      });
      expectErrorBody(res, 502, 'SERVICE_UNAVAILABLE');
      expect(res.body).to.include({ error: 'Bad Gateway', service: SERVICE, correlationId: 'odd-output-2' });
      expect(res.text).not.to.contain('should be a string');
      await eventually(async () => expect(strict.output()).to.contain('[odd-output-2]'), 3000);
    });
  });
});
