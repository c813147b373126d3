import { expect } from 'chai';
import { buildOpenApiDocument } from '../../plugin/openapi';
import { buildRouteTable } from '../../plugin/contracts/route-table';
import { toOpenApiPath } from '../../plugin/openapi/paths';
import type { Contract } from '../../plugin/contracts/types';
import { referenceContracts, validateOpenApi } from './support';

type Op = Record<string, any>;

function op(doc: ReturnType<typeof buildOpenApiDocument>, method: string, path: string): Op {
  const operation = doc.paths[path]?.[method];
  expect(operation, `${method.toUpperCase()} ${path} is documented`).to.be.an('object');
  return operation as Op;
}

/** Contracts that exercise the corners: draft-07 local refs, a root $id, a ':' in the name, generic routes, a public action. */
const tricky: Contract[] = [
  {
    messageType: 'ResetPasswordCommand',
    targetService: 'auth-service',
    inputSchema: { $schema: 'http://json-schema.org/draft-07/schema#', $id: 'urn:reset', type: 'object', properties: { email: { $ref: '#/definitions/email' } }, required: ['email'], definitions: { email: { type: 'string', format: 'email' } } },
    outputSchema: { $ref: '#/$defs/done', $defs: { done: { type: 'object', properties: { sent: { type: 'boolean' } } } } },
    requiredPermissions: [],
    public: true,
  },
  { messageType: 'ReportQuery', targetService: 'reports', inputSchema: { type: 'object', properties: { from: { type: 'string', format: 'date' } } }, outputSchema: { type: 'object' }, requiredPermissions: ['reports:read'] },
  { messageType: 'StatsQuery', targetService: 'reports', inputSchema: { type: 'object' }, outputSchema: {}, requiredPermissions: ['stats:read'] },
  { messageType: 'orders:ArchiveCommand', targetService: 'orders', inputSchema: { type: 'object', properties: { const: { type: 'string' } } }, outputSchema: {}, requiredPermissions: ['orders:archive'] },
  { messageType: 'GetFileQuery', targetService: 'files', http: { method: 'GET', paths: ['/api/files/:fileId(\\d+)'] }, inputSchema: { type: 'object', properties: { fileId: { type: 'integer' } }, required: ['fileId'] }, outputSchema: {}, requiredPermissions: ['files:read'] },
];

describe('OpenAPI document', () => {
  const contracts = referenceContracts();
  const doc = buildOpenApiDocument(contracts);

  it('is a valid OpenAPI 3.1 document by a maintained validator, every $ref resolving', async () => {
    const result = await validateOpenApi(doc);
    expect(result.errors, JSON.stringify(result.errors)).to.equal(undefined);
    expect(result.valid).to.equal(true);
    expect(result.version).to.match(/^3\.1/);
    expect(doc.openapi).to.equal('3.1.0');
  });

  it('stays valid with local refs, $id, odd message types, generic routes, route patterns and debug paths', async () => {
    const all = buildOpenApiDocument([...contracts, ...tricky], { debugEndpoints: true });
    const result = await validateOpenApi(all);
    expect(result.errors, JSON.stringify(result.errors)).to.equal(undefined);
    expect(result.valid).to.equal(true);
    // And with nothing discovered yet.
    expect((await validateOpenApi(buildOpenApiDocument([]))).valid).to.equal(true);
  });

  it('the validator used here does refuse a broken document (the check has teeth)', async () => {
    const broken = JSON.parse(JSON.stringify(doc));
    broken.paths['/api/users'].get.responses['200'].content['application/json'].schema = { $ref: '#/components/schemas/Missing' };
    expect((await validateOpenApi(broken)).valid).to.equal(false);
    const noResponses = JSON.parse(JSON.stringify(doc));
    noResponses.paths['/api/users'].post.responses = 'none';
    expect((await validateOpenApi(noResponses)).valid).to.equal(false);
  });

  it('documents exactly the routes of the route table (the routes the config writer writes)', () => {
    const table = buildRouteTable(contracts);
    const documented = Object.entries(doc.paths)
      .flatMap(([path, item]) => Object.keys(item).map((m) => `${m.toUpperCase()} ${path}`))
      .filter((r) => r.includes(' /api/') && !r.includes('/api/discovery/'));
    expect(documented.sort()).to.deep.equal(table.endpoints.map((e) => `${e.method} ${toOpenApiPath(e.path)}`).sort());
  });

  it('create: the input schema as the request body, 201 with Location, permissions, default security, 409/422', () => {
    const create = op(doc, 'post', '/api/users');
    expect(create.requestBody.required).to.equal(true);
    expect(create.requestBody.content['application/json'].schema).to.deep.equal({ $ref: '#/components/schemas/CreateUserCommand.Input' });
    const input = (doc.components as Op).schemas['CreateUserCommand.Input'];
    expect(input.required).to.deep.equal(['email']);
    expect(input.properties.password.writeOnly).to.equal(true);
    expect(create.responses['201'].content['application/json'].schema).to.deep.equal({ $ref: '#/components/schemas/CreateUserCommand.Output' });
    expect(create.responses['201'].headers).to.have.keys('Location', 'X-Correlation-Id', 'X-Request-Id');
    expect(create.responses).not.to.have.property('200');
    expect(create['x-required-permissions']).to.deep.equal(['users:create']);
    expect(create.description).to.contain('`users:create`');
    expect(create.security).to.deep.equal([{ bearerAuth: [] }, { devUserId: [], devPermissions: [] }, { devUserId: [] }]);
    expect(create.tags).to.deep.equal(['users-service']);
    expect(create.responses).to.include.keys('400', '401', '403', '409', '422', '429', '500', '502', '503', '504');
    expect(create.responses['401']).to.deep.equal({ $ref: '#/components/responses/Unauthorized' });
  });

  it('get by id: a required path parameter typed from the input schema, other fields as query parameters, 200', () => {
    const get = op(doc, 'get', '/api/users/{userId}');
    expect(get.parameters).to.deep.equal([
      { name: 'userId', in: 'path', required: true, schema: { type: 'string', minLength: 1, maxLength: 100 } },
      { name: 'fields', in: 'query', required: false, schema: { type: 'string', description: 'comma-separated field names to return' }, description: 'comma-separated field names to return' },
    ]);
    expect(get).not.to.have.property('requestBody');
    expect(get.responses['200'].content['application/json'].schema).to.deep.equal({ $ref: '#/components/schemas/GetUserQuery.Output' });
    expect(get['x-required-permissions']).to.deep.equal(['users:read']);
    expect(get.responses).not.to.have.property('409');
  });

  it('list: query parameters from the input schema, plus the get variant selected by ?userId=', () => {
    const list = op(doc, 'get', '/api/users');
    const byName = Object.fromEntries(list.parameters.map((p: Op) => [p.name, p]));
    expect(Object.keys(byName)).to.include.members(['page', 'pageSize', 'limit', 'offset', 'role', 'search', 'sort', 'order', 'userId']);
    expect(byName.pageSize).to.deep.include({ in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 } });
    expect(byName.order.schema.enum).to.deep.equal(['asc', 'desc']);
    expect(byName.userId).to.deep.include({ in: 'query', required: false });
    expect(list['x-message-type']).to.equal('ListUsersQuery');
    expect(list['x-contracts'].map((c: Op) => [c.messageType, c.whenQuery])).to.deep.equal([['ListUsersQuery', undefined], ['GetUserQuery', 'userId']]);
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

  it('public contracts: security [] and no 401/403; every path of an http override is documented', () => {
    for (const path of ['/api/auth/authenticate', '/api/login']) {
      const login = op(doc, 'post', path);
      expect(login.security).to.deep.equal([]);
      expect(login.responses).not.to.have.any.keys('401', '403');
      expect(login['x-required-permissions']).to.deep.equal([]);
      expect(login.tags).to.deep.equal(['auth-service']);
      expect(login.description).to.contain('public');
    }
    const ids = Object.values(doc.paths).flatMap((item) => Object.values(item).map((o) => (o as Op).operationId));
    expect(new Set(ids).size, 'operationIds are unique').to.equal(ids.length);
  });

  it('security schemes: bearer JWT and the development headers, described as development only', () => {
    const schemes = (doc.components as Op).securitySchemes;
    expect(schemes.bearerAuth).to.deep.include({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' });
    expect(schemes.devUserId).to.deep.include({ type: 'apiKey', in: 'header', name: 'X-Dev-User-Id' });
    expect(schemes.devPermissions).to.deep.include({ type: 'apiKey', in: 'header', name: 'X-Dev-Permissions' });
    expect(schemes.devUserId.description).to.match(/development only/i).and.contain('DEVELOPMENT_AUTH_ENABLED');
  });

  it('error responses use the error body, one per status', () => {
    const components = doc.components as Op;
    expect(components.schemas.ErrorBody.properties).to.include.keys('error', 'message', 'code', 'details', 'correlationId', 'timestamp', 'requiredPermission', 'validationErrors', 'retryAfter', 'timeoutMs');
    for (const status of ['400', '401', '403', '404', '409', '422', '429', '500', '502', '503', '504']) {
      const name = op(doc, 'post', '/api/users').responses[status].$ref.split('/').pop();
      const response = components.responses[name];
      expect(response.content['application/json'].schema).to.deep.equal({ $ref: '#/components/schemas/ErrorBody' });
    }
    expect(components.responses.NotFound.description).to.contain('HANDLER_NOT_FOUND');
    expect(components.responses.ServiceUnavailable.headers).to.have.property('Retry-After');
    expect(components.responses.BadGateway.content['application/json'].example.error).to.equal('Bad Gateway');
  });

  it('generic routes: /api/actions takes { messageType, input }, /api/data takes ?messageType=', () => {
    const all = buildOpenApiDocument([...contracts, ...tricky]);
    const actions = op(all, 'post', '/api/actions');
    const options = actions.requestBody.content['application/json'].schema.oneOf;
    expect(options.map((o: Op) => o.properties.messageType.const)).to.deep.equal(['ResetPasswordCommand', 'orders:ArchiveCommand']);
    expect(options[1].properties.input).to.deep.equal({ $ref: '#/components/schemas/orders_ArchiveCommand.Input' });
    expect(actions['x-required-permissions']).to.deep.equal({ ResetPasswordCommand: [], 'orders:ArchiveCommand': ['orders:archive'] });
    expect(actions.tags).to.deep.equal(['generic']);
    const data = op(all, 'get', '/api/data');
    expect(data.parameters[0]).to.deep.include({ name: 'messageType', in: 'query', required: true, schema: { type: 'string', enum: ['ReportQuery', 'StatsQuery'] } });
    expect(data['x-required-permissions']).to.deep.equal({ ReportQuery: ['reports:read'], StatsQuery: ['stats:read'] });
    expect(op(all, 'post', '/api/reset-password').security).to.deep.equal([]);
    expect(op(all, 'get', '/api/files/{fileId}').parameters[0]).to.deep.equal({ name: 'fileId', in: 'path', required: true, schema: { type: 'integer' } });
  });

  it('re-roots a contract schema\'s local refs at its component and drops its $id; data is left alone', () => {
    const all = buildOpenApiDocument(tricky) as Op;
    const input = all.components.schemas['ResetPasswordCommand.Input'];
    expect(input.properties.email).to.deep.equal({ $ref: '#/components/schemas/ResetPasswordCommand.Input/definitions/email' });
    expect(input).not.to.have.property('$id');
    expect(all.components.schemas['ResetPasswordCommand.Output'].$ref).to.equal('#/components/schemas/ResetPasswordCommand.Output/$defs/done');
    // A property named `const` is a schema; a `$ref` inside `const` data is a value (the validator's ref resolver
    // would chase it, so this one is not in the validity test above).
    const data: Contract = { ...tricky[3]!, messageType: 'DataCommand', inputSchema: { properties: { const: { const: { $ref: '#/x' } } } } };
    const withData = buildOpenApiDocument([data]) as Op;
    expect(withData.components.schemas['DataCommand.Input'].properties.const).to.deep.equal({ const: { $ref: '#/x' } });
    expect(all.components.schemas['orders_ArchiveCommand.Input'].properties.const).to.deep.equal({ type: 'string' });
    expect(tricky[0]!.inputSchema.properties).to.deep.equal({ email: { $ref: '#/definitions/email' } });
  });

  it('lists the operations endpoints; /debug/contracts only when it is enabled', () => {
    expect(doc.paths).to.include.keys('/health', '/api/discovery/contracts', '/api-docs', '/api-docs/openapi.json');
    expect(doc.paths).not.to.have.property('/debug/contracts');
    expect(buildOpenApiDocument(contracts, { debugEndpoints: true }).paths).to.have.property('/debug/contracts');
    const health = op(doc, 'get', '/health');
    expect(health.security).to.deep.equal([]);
    expect(health.responses['503'].content['application/json'].schema).to.deep.equal({ $ref: '#/components/schemas/HealthUnavailable' });
    expect(op(doc, 'get', '/api/discovery/contracts').security).to.have.length(3);
  });

  it('is deterministic, and info.version changes with the contracts', () => {
    expect(JSON.stringify(buildOpenApiDocument([...contracts].reverse()))).to.equal(JSON.stringify(doc));
    const fewer = buildOpenApiDocument(contracts.slice(1));
    expect((fewer.info as Op).version).not.to.equal((doc.info as Op).version);
  });
});
