import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildOpenApiDocument } from '../../plugin/openapi/document';
import { ERROR_CODES } from '../../plugin/errors/codes';
import { GatewayError } from '../../plugin/errors/gateway-error';
import { toErrorBody } from '../../plugin/errors/error-body';
import { buildEndpointSpecs } from '../../plugin/contracts/endpoint-specs';
import { compileSchema } from '../../plugin/validation/ajv';
import { toOpenApiPath } from '../../plugin/openapi/paths';
import type { Contract } from '../../plugin/contracts/types';
import { referenceContracts, trickyContracts, validateOpenApi } from './support';
import { planRoutes } from '../../plugin/contracts/route-plan';

type Op = Record<string, any>;

function op(doc: ReturnType<typeof buildOpenApiDocument>, method: string, path: string): Op {
  const operation = doc.paths[path]?.[method];
  expect(operation, `${method.toUpperCase()} ${path} is documented`).to.be.an('object');
  return operation as Op;
}

describe('OpenAPI document', () => {
  const contracts = referenceContracts();
  const tricky = trickyContracts();
  const doc = buildOpenApiDocument(planRoutes(contracts));

  it('is a valid OpenAPI 3.1 document by a maintained validator, every $ref resolving', async () => {
    const result = await validateOpenApi(doc);
    expect(result.errors, JSON.stringify(result.errors)).to.equal(undefined);
    expect(result.valid).to.equal(true);
    expect(result.version).to.match(/^3\.1/);
    expect(doc.openapi).to.equal('3.1.0');
  });

  it('stays valid with local refs, $id, odd message types, generic routes, route patterns and debug paths', async () => {
    const all = buildOpenApiDocument(planRoutes([...contracts, ...tricky]), { debugEndpoints: true });
    const result = await validateOpenApi(all);
    expect(result.errors, JSON.stringify(result.errors)).to.equal(undefined);
    expect(result.valid).to.equal(true);
    // And with nothing discovered yet.
    expect((await validateOpenApi(buildOpenApiDocument(planRoutes([])))).valid).to.equal(true);
  });

  it('the validator used here does refuse a broken document (the check has teeth)', async () => {
    const broken = JSON.parse(JSON.stringify(doc));
    broken.paths['/api/users'].get.responses['200'].content['application/json'].schema = {
      $ref: '#/components/schemas/Missing',
    };
    expect((await validateOpenApi(broken)).valid).to.equal(false);
    const noResponses = JSON.parse(JSON.stringify(doc));
    noResponses.paths['/api/users'].post.responses = 'none';
    expect((await validateOpenApi(noResponses)).valid).to.equal(false);
  });

  it('documents exactly the routes of the route table (the routes the config writer writes)', () => {
    const table = buildEndpointSpecs(contracts);
    const documented = Object.entries(doc.paths)
      .flatMap(([path, item]) => Object.keys(item).map((m) => `${m.toUpperCase()} ${path}`))
      .filter((r) => r.includes(' /api/') && !r.includes('/api/discovery/'));
    expect(documented.sort()).to.deep.equal(table.endpoints.map((e) => `${e.method} ${toOpenApiPath(e.path)}`).sort());
  });

  it('create: the input schema as the request body, 201 with Location, permissions, default security, 409/422', () => {
    const create = op(doc, 'post', '/api/users');
    expect(create.requestBody.required).to.equal(true);
    expect(create.requestBody.content['application/json'].schema).to.deep.equal({
      $ref: '#/components/schemas/CreateUserCommand.Input',
    });
    const input = (doc.components as Op).schemas['CreateUserCommand.Input'];
    expect(input.required).to.deep.equal(['email']);
    expect(input.properties.password.writeOnly).to.equal(true);
    expect(create.responses['201'].content['application/json'].schema).to.deep.equal({
      $ref: '#/components/schemas/CreateUserCommand.Output',
    });
    expect(create.responses['201'].headers).to.have.keys('Location', 'X-Correlation-Id', 'X-Request-Id');
    expect(create.responses).not.to.have.property('200');
    expect(create['x-required-permissions']).to.deep.equal(['users:create']);
    expect(create.description).to.contain('`users:create`');
    expect(create.security).to.deep.equal([{ bearerAuth: [] }]);
    expect(create.tags).to.deep.equal(['users-service']);
    expect(create.responses).to.have.keys(
      '201',
      '400',
      '401',
      '403',
      '404',
      '409',
      '413',
      '415',
      '422',
      '500',
      '502',
      '503',
      '504',
      'default',
    );
    expect(create.responses['401']).to.deep.equal({ $ref: '#/components/responses/Unauthorized' });
    expect(create.responses.default).to.deep.equal({ $ref: '#/components/responses/OtherError' });
  });

  it('get by id: a required path parameter typed from the input schema, other fields as query parameters, 200', () => {
    const get = op(doc, 'get', '/api/users/{userId}');
    expect(get.parameters).to.deep.equal([
      {
        name: 'userId',
        in: 'path',
        required: true,
        schema: { type: 'string', minLength: 1, maxLength: 100 },
        example: 'string',
      },
      {
        name: 'fields',
        in: 'query',
        required: false,
        schema: { type: 'string', description: 'comma-separated field names to return (userId and id always are)' },
        description: 'comma-separated field names to return (userId and id always are)',
        example: 'string',
      },
    ]);
    expect(get).not.to.have.property('requestBody');
    expect(get.responses['200'].content['application/json'].schema).to.deep.equal({
      $ref: '#/components/schemas/GetUserQuery.Output',
    });
    expect(get['x-required-permissions']).to.deep.equal(['users:read']);
    expect(get.responses).not.to.have.property('409');
  });

  it('list: query parameters from the input schema, plus the get variant selected by ?userId=', () => {
    const list = op(doc, 'get', '/api/users');
    const byName = Object.fromEntries(list.parameters.map((p: Op) => [p.name, p]));
    expect(Object.keys(byName)).to.include.members([
      'page',
      'pageSize',
      'limit',
      'offset',
      'role',
      'search',
      'sort',
      'order',
      'userId',
    ]);
    expect(byName.pageSize).to.deep.include({
      in: 'query',
      required: false,
      schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
    });
    expect(byName.order.schema.enum).to.deep.equal(['asc', 'desc']);
    expect(byName.userId).to.deep.include({ in: 'query', required: false });
    expect(list['x-message-type']).to.equal('ListUsersQuery');
    expect(list['x-contracts'].map((c: Op) => [c.messageType, c.whenQuery])).to.deep.equal([
      ['ListUsersQuery', undefined],
      ['GetUserQuery', 'userId'],
    ]);
    expect(list.responses['200'].content['application/json'].schema.anyOf).to.deep.equal([
      { $ref: '#/components/schemas/ListUsersQuery.Output' },
      { $ref: '#/components/schemas/GetUserQuery.Output' },
    ]);
  });

  it('update: the body leaves out what the path carries; delete: 204 without content', () => {
    const update = op(doc, 'put', '/api/users/{userId}');
    const body = update.requestBody.content['application/json'].schema;
    expect(body.properties).not.to.have.property('userId');
    expect(body).not.to.have.property('required');
    expect(body.properties).to.include.keys('email', 'firstName', 'lastName', 'name', 'role');
    expect(update.requestBody.required).to.equal(false);
    expect(update.responses).to.have.property('200');
    const del = op(doc, 'delete', '/api/users/{userId}');
    expect(del.responses['204']).not.to.have.property('content');
    expect(del.responses).not.to.have.property('200');
    expect(del['x-required-permissions']).to.deep.equal(['users:delete']);
    expect(del).not.to.have.property('requestBody');
  });

  it('public contracts: security [], 401 from the service (bad credentials or token), no 403/409/422; every override path is documented', () => {
    for (const path of ['/api/auth/authenticate', '/api/login', '/api/auth/refresh-token', '/api/refresh-token']) {
      const login = op(doc, 'post', path);
      expect(login.security).to.deep.equal([]);
      expect(login.responses).to.have.keys(
        '200',
        '400',
        '401',
        '404',
        '413',
        '415',
        '500',
        '502',
        '503',
        '504',
        'default',
      );
      expect(login['x-required-permissions']).to.deep.equal([]);
      expect(login.tags).to.deep.equal(['auth-service']);
      expect(login.description).to.contain('public');
    }
    const ids = Object.values(doc.paths).flatMap((item) => Object.values(item).map((o) => (o as Op).operationId));
    expect(new Set(ids).size, 'operationIds are unique').to.equal(ids.length);
  });

  it('security schemes: bearer JWT, and the development headers (development only) while development auth is on', () => {
    expect((doc.components as Op).securitySchemes).to.have.keys('bearerAuth');
    expect(doc.security).to.deep.equal([{ bearerAuth: [] }]);
    const dev = buildOpenApiDocument(planRoutes(contracts), { developmentAuth: true });
    expect(op(dev, 'post', '/api/users').security).to.deep.equal([
      { bearerAuth: [] },
      { devUserId: [], devPermissions: [] },
      { devUserId: [] },
    ]);
    expect(op(dev, 'post', '/api/login').security).to.deep.equal([]);
    const schemes = (dev.components as Op).securitySchemes;
    expect(schemes.bearerAuth).to.deep.include({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' });
    expect(schemes.devUserId).to.deep.include({ type: 'apiKey', in: 'header', name: 'X-Dev-User-Id' });
    expect(schemes.devPermissions).to.deep.include({ type: 'apiKey', in: 'header', name: 'X-Dev-Permissions' });
    expect(schemes.devUserId.description)
      .to.match(/development only/i)
      .and.contain('DEVELOPMENT_AUTH_ENABLED');
  });

  it('error responses use the error body, one per status', () => {
    const limited = buildOpenApiDocument(planRoutes(contracts), { rateLimited: true });
    const components = limited.components as Op;
    expect(components.schemas.ErrorBody.properties).to.include.keys(
      'error',
      'message',
      'code',
      'details',
      'correlationId',
      'timestamp',
      'requiredPermission',
      'validationErrors',
      'retryAfter',
      'timeoutMs',
    );
    for (const status of [
      '400',
      '401',
      '403',
      '404',
      '409',
      '413',
      '415',
      '422',
      '429',
      '500',
      '502',
      '503',
      '504',
      'default',
    ]) {
      const name = op(limited, 'post', '/api/users').responses[status].$ref.split('/').pop();
      const response = components.responses[name];
      expect(response.content['application/json'].schema).to.deep.equal({ $ref: '#/components/schemas/ErrorBody' });
    }
    expect(components.responses.Unauthorized.description).to.contain('INVALID_CREDENTIALS');
    expect(components.responses.NotFound.description).to.contain('HANDLER_NOT_FOUND');
    expect(components.responses.ServiceUnavailable.headers).to.have.property('Retry-After');
    expect(components.responses.BadGateway.content['application/json'].example.error).to.equal('Bad Gateway');
  });

  it('generic routes: /api/actions takes { messageType, input }, /api/data takes ?messageType=', () => {
    const all = buildOpenApiDocument(planRoutes([...contracts, ...tricky]));
    const actions = op(all, 'post', '/api/actions');
    const body = actions.requestBody.content['application/json'];
    const options = body.schema.oneOf;
    // ResetPasswordCommand's schema does not compile (a `urn:` $id without a namespace): no example rather than an unchecked one.
    expect(Object.keys(body.examples)).to.deep.equal(['orders:ArchiveCommand']);
    expect(body.examples['orders:ArchiveCommand'].value).to.deep.equal({
      messageType: 'orders:ArchiveCommand',
      input: { const: 'string' },
    });
    expect(options.map((o: Op) => o.properties.messageType.const)).to.deep.equal([
      'ResetPasswordCommand',
      'orders:ArchiveCommand',
    ]);
    expect(options[1].properties.input).to.deep.equal({ $ref: '#/components/schemas/orders_ArchiveCommand.Input' });
    expect(actions['x-required-permissions']).to.deep.equal({
      ResetPasswordCommand: [],
      'orders:ArchiveCommand': ['orders:archive'],
    });
    expect(actions.tags).to.deep.equal(['generic']);
    const data = op(all, 'get', '/api/data');
    expect(data.parameters[0]).to.deep.include({
      name: 'messageType',
      in: 'query',
      required: true,
      schema: { type: 'string', enum: ['ReportQuery', 'StatsQuery'] },
    });
    expect(data['x-required-permissions']).to.deep.equal({ ReportQuery: ['reports:read'], StatsQuery: ['stats:read'] });
    expect(op(all, 'post', '/api/reset-password').security).to.deep.equal([]);
    expect(op(all, 'get', '/api/files/{fileId}').parameters[0]).to.deep.equal({
      name: 'fileId',
      in: 'path',
      required: true,
      schema: { type: 'integer' },
      example: 0,
    });
  });

  it('one generic command: /api/actions takes its object itself (no oneOf of one), with an example body', () => {
    const one = buildOpenApiDocument(planRoutes([...contracts, tricky[3]!]));
    const body = op(one, 'post', '/api/actions').requestBody.content['application/json'];
    expect(body.schema).not.to.have.property('oneOf');
    expect(body.schema.properties.messageType).to.deep.equal({ const: 'orders:ArchiveCommand' });
    expect(body.example).to.deep.equal({ messageType: 'orders:ArchiveCommand', input: { const: 'string' } });
  });

  it('gives every body and parameter an example its contract accepts, the path fields out of the body', () => {
    const create = op(doc, 'post', '/api/users').requestBody.content['application/json'].example;
    expect(create.email).to.equal('user@example.com');
    const check = compileSchema(contracts.find((c) => c.messageType === 'CreateUserCommand')!.inputSchema, 'input');
    expect(check(structuredClone(create)), JSON.stringify(check.errors)).to.equal(true);
    const update = op(doc, 'put', '/api/users/{userId}');
    expect(update.parameters[0]).to.deep.include({ name: 'userId', in: 'path' });
    expect(update.parameters[0].example).to.be.a('string');
    expect(update.requestBody.content['application/json'].example).not.to.have.property('userId');
    const key = op(doc, 'post', '/api/users').parameters.find((p: Op) => p.name === 'Idempotency-Key');
    expect(key.example).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(key.schema).to.deep.include({ maxLength: 255 });
    expect(new RegExp(key.schema.pattern).test(key.example)).to.equal(true);
  });

  it("re-roots a contract schema's local refs at its component and drops its $id; data is left alone", () => {
    const all = buildOpenApiDocument(planRoutes(tricky)) as Op;
    const input = all.components.schemas['ResetPasswordCommand.Input'];
    expect(input.properties.email).to.deep.equal({
      $ref: '#/components/schemas/ResetPasswordCommand.Input/definitions/email',
    });
    expect(input).not.to.have.property('$id');
    expect(all.components.schemas['ResetPasswordCommand.Output'].$ref).to.equal(
      '#/components/schemas/ResetPasswordCommand.Output/$defs/done',
    );
    // A property named `const` is a schema; a `$ref` inside `const` data is a value (the validator's ref resolver
    // would chase it, so this one is not in the validity test above).
    const data: Contract = {
      ...tricky[3]!,
      messageType: 'DataCommand',
      inputSchema: { properties: { const: { const: { $ref: '#/x' } } } },
    };
    const withData = buildOpenApiDocument(planRoutes([data])) as Op;
    expect(withData.components.schemas['DataCommand.Input'].properties.const).to.deep.equal({ const: { $ref: '#/x' } });
    expect(all.components.schemas['orders_ArchiveCommand.Input'].properties.const).to.deep.equal({ type: 'string' });
    expect(tricky[0]!.inputSchema.properties).to.deep.equal({ email: { $ref: '#/definitions/email' } });
  });

  it('lists the operations endpoints; /debug/contracts only when it is enabled', () => {
    expect(doc.paths).to.include.keys('/health', '/api/discovery/contracts', '/api-docs', '/api-docs/openapi.json');
    expect(doc.paths).not.to.have.property('/debug/contracts');
    expect(buildOpenApiDocument(planRoutes(contracts), { debugEndpoints: true }).paths).to.have.property(
      '/debug/contracts',
    );
    const health = op(doc, 'get', '/health');
    expect(health.security).to.deep.equal([]);
    expect(health.responses['503'].content['application/json'].schema).to.deep.equal({
      $ref: '#/components/schemas/HealthUnavailable',
    });
    expect(op(doc, 'get', '/api/discovery/contracts').security).to.deep.equal([{ bearerAuth: [] }]);
  });

  it('is deterministic, and info.version changes with the contracts', () => {
    expect(JSON.stringify(buildOpenApiDocument(planRoutes([...contracts].reverse())))).to.equal(JSON.stringify(doc));
    const fewer = buildOpenApiDocument(planRoutes(contracts.slice(1)));
    expect((fewer.info as Op).version).not.to.equal((doc.info as Op).version);
  });

  it("each generated route declares the error statuses its pipeline can answer, and `default` for the service's others", () => {
    const statuses = (d: typeof doc, method: string, path: string): string[] =>
      Object.keys(op(d, method, path).responses).sort();
    const always = ['401', '404', '500', '502', '503', '504', 'default'];
    // A query by id: path parameter (400), permission (403); no body, no conflict.
    expect(statuses(doc, 'get', '/api/users/{userId}')).to.deep.equal(['200', '400', '403', ...always].sort());
    // A delete reads a body when one is sent (400/413/415), but conflicts are for create and update.
    expect(statuses(doc, 'delete', '/api/users/{userId}')).to.deep.equal(
      ['204', '400', '403', '413', '415', ...always].sort(),
    );
    // Authenticated, no permission required: the permission step cannot refuse.
    expect(statuses(doc, 'post', '/api/logout')).to.deep.equal(['200', '400', '413', '415', ...always].sort());
    // An input schema that accepts any object, no path parameter, no body: nothing to refuse with 400.
    const open: Contract = {
      messageType: 'ListWidgetsQuery',
      targetService: 'widgets',
      inputSchema: { type: 'object', description: 'no filter' },
      outputSchema: {},
      requiredPermissions: ['widgets:read'],
    };
    const limitedOwn: Contract = { ...open, messageType: 'ListGadgetsQuery', rateLimit: { max: 5 } };
    const mixed = buildOpenApiDocument(planRoutes([open, limitedOwn, ...tricky]));
    expect(statuses(mixed, 'get', '/api/widgets')).to.deep.equal(['200', '403', ...always].sort());
    // A contract's own rate limit: 429 on its route only; the gateway-wide one: 429 on every generated route.
    expect(statuses(mixed, 'get', '/api/gadgets')).to.include('429');
    expect(statuses(mixed, 'post', '/api/actions')).not.to.include('429');
    const limited = buildOpenApiDocument(planRoutes([open, ...tricky]), { rateLimited: true });
    for (const [path, item] of Object.entries(limited.paths).filter(
      ([p]) => p.startsWith('/api/') && !p.startsWith('/api/discovery'),
    )) {
      for (const operation of Object.values(item))
        expect(Object.keys((operation as Op).responses), path).to.include('429');
    }
    // The per-address limit of public contracts: 429 on the routes that reach a public contract, not on the others.
    const publicLimited = buildOpenApiDocument(planRoutes(contracts), { publicRateLimited: true });
    for (const path of ['/api/login', '/api/refresh-token'])
      expect(statuses(publicLimited, 'post', path), path).to.include('429');
    expect(statuses(publicLimited, 'post', '/api/users')).not.to.include('429');
    expect(statuses(doc, 'post', '/api/login')).not.to.include('429');
    // A generic query route needs `messageType` (400) even when every input it reaches accepts anything.
    expect(statuses(mixed, 'get', '/api/data')).to.include('400');
    // The gateway's own endpoints answer only what their handlers send; no service is behind them.
    expect(statuses(doc, 'get', '/health')).to.deep.equal(['200', '503']);
    expect(statuses(doc, 'get', '/api/discovery/contracts')).to.deep.equal(['200', '401', '500', '503']);
    expect(statuses(doc, 'get', '/api-docs/openapi.json')).to.deep.equal(['200', '304', '503']);
  });

  it('ErrorBody: the fields every error answer carries are required, and code is the enum of the one error table', () => {
    const errorBody = (doc.components as Op).schemas.ErrorBody;
    const { body } = toErrorBody(new GatewayError('NOT_FOUND', 'User 1 does not exist'), 'a-correlation-id');
    expect([...errorBody.required].sort()).to.deep.equal(Object.keys(body).sort());
    expect(errorBody.required).to.include.members(['message', 'correlationId']);
    expect(errorBody.properties.code.enum).to.deep.equal(Object.keys(ERROR_CODES));
  });

  it("response schemas keep the required lists of the contracts' output schemas", () => {
    const schemas = (doc.components as Op).schemas;
    expect(schemas['AuthenticateCommand.Output'].required).to.include.members([
      'accessToken',
      'refreshToken',
      'expiresIn',
      'user',
    ]);
    expect(schemas['AuthenticateCommand.Output'].properties.user.required).to.include.members([
      'userId',
      'email',
      'permissions',
    ]);
    expect(schemas['CreateUserCommand.Output'].required).to.include.members([
      'userId',
      'email',
      'role',
      'permissions',
      'createdAt',
      'updatedAt',
    ]);
    expect(schemas['UpdateUserCommand.Output'].required).to.include.members(['updatedAt', 'role', 'permissions']);
    // Field selection (?fields=) can leave anything out of a get but its ids.
    expect(schemas['GetUserQuery.Output'].required).to.deep.equal(['userId', 'id']);
  });

  it('object schemas name their fields or allow any: none reads as an object with no field', () => {
    const all = buildOpenApiDocument(planRoutes([...contracts, ...tricky]), { debugEndpoints: true }) as Op;
    expect(all.components.schemas['ReportQuery.Output']).to.deep.equal({ type: 'object', additionalProperties: true });
    expect(all.components.schemas.DiscoveredContract.properties.inputSchema).to.include({
      type: 'object',
      additionalProperties: true,
    });
    const bare: string[] = [];
    const visit = (node: unknown, at: string): void => {
      if (Array.isArray(node)) {
        for (const [i, n] of node.entries()) visit(n, `${at}/${i}`);
        return;
      }
      if (node === null || typeof node !== 'object') return;
      const o = node as Op;
      const shaped = [
        'properties',
        'additionalProperties',
        'patternProperties',
        '$ref',
        'allOf',
        'anyOf',
        'oneOf',
      ].some((k) => k in o);
      if (o.type === 'object' && !shaped) bare.push(at);
      for (const [k, v] of Object.entries(o))
        if (k !== 'example' && k !== 'const' && k !== 'enum') visit(v, `${at}/${k}`);
    };
    visit(all, '#');
    expect(bare).to.deep.equal([]);
  });

  it("a relative server, the package's licence, and only the tags and components something uses", () => {
    expect(doc.servers).to.deep.equal([{ url: '/', description: 'The gateway serving this document.' }]);
    const pkg = JSON.parse(readFileSync(join(__dirname, '../../../package.json'), 'utf8')) as { license: string };
    expect((doc.info as Op).license).to.deep.equal({ name: pkg.license, identifier: pkg.license });
    // The reference services use no generic route: no empty "generic" section.
    expect((doc.tags as Op[]).map((t) => t.name)).to.deep.equal(['auth-service', 'users-service', 'operations']);
    expect((buildOpenApiDocument(planRoutes(tricky)).tags as Op[]).map((t) => t.name)).to.include('generic');
    const components = doc.components as Op;
    // Inputs sent as query parameters, a 204's output, the debug body while debug is off: nothing refers to them.
    expect(components.schemas).not.to.have.any.keys('GetUserQuery.Input', 'DeleteUserCommand.Output', 'DebugSnapshot');
    expect(components.schemas).to.include.keys('CreateUserCommand.Input', 'ErrorBody', 'BusStatus');
    expect(components.responses).not.to.have.property('TooManyRequests');
    expect(
      (buildOpenApiDocument(planRoutes(contracts), { debugEndpoints: true, rateLimited: true }).components as Op)
        .schemas,
    ).to.have.property('DebugSnapshot');
    expect(components.securitySchemes).to.have.keys('bearerAuth');
  });
});
