import { expect } from 'chai';
import { buildOpenApiDocument } from '../../plugin/openapi/document';
import { handWrittenRoutes } from '../../plugin/openapi/hand-written';
import { gatewayConfigOf } from '../../plugin/host/express-gateway';
import { PUBLIC_SECURITY, TOKEN_SECURITY } from '../../plugin/openapi/security';
import { quiet, testRuntime } from '../support/runtime';
import { HAND_WRITTEN_CONFIG, referenceContracts, validateOpenApi } from './support';
import { planRoutes } from '../../plugin/contracts/route-plan';

describe('OpenAPI document: hand-written routes that end in contract-router', () => {
  const routes = handWrittenRoutes(HAND_WRITTEN_CONFIG, 'contracts-');

  it("reads them from the gateway config: real paths and methods, the steps' security; generated, proxied and pattern paths left out", () => {
    expect(
      routes.map(
        (r) =>
          `${r.method ?? '*'} ${r.path} ${r.messageType} ${r.authentication} ${r.permissions?.join('+') ?? '-'}${r.public ? ' public' : ''}`,
      ),
    ).to.deep.equal([
      'POST /signup CreateUserCommand required users:create+users:invite',
      'POST /register CreateUserCommand required users:create+users:invite',
      'GET /me/:userId GetUserQuery optional - public',
      '* /people ListUsersQuery none -',
    ]);
    expect(routes[0]?.inputSchema).to.deep.include({ required: ['email'], additionalProperties: false });
  });

  const document = buildOpenApiDocument(planRoutes(referenceContracts(), { excluded: ['CreateUserCommand'] }), {
    handWritten: routes,
  });
  type Operation = Record<string, any>;
  const op = (path: string, method: string): Operation => document.paths[path]?.[method] as Operation;

  it("lists each with the contract's schemas and the security its pipeline applies", () => {
    const signup = op('/signup', 'post');
    expect(signup.operationId).to.equal('CreateUserCommand');
    expect(signup['x-pipeline']).to.equal('signup');
    expect(signup.security).to.deep.equal(TOKEN_SECURITY);
    expect(signup['x-required-permissions']).to.deep.equal(['users:create', 'users:invite']);
    expect(signup.responses).to.include.keys('201', '400', '401', '403');
    expect(signup.responses['201'].content['application/json'].schema).to.deep.equal({
      $ref: '#/components/schemas/CreateUserCommand.Output',
    });
    // The body is checked against the step's inline schema, so that is the one the document shows.
    const body = signup.requestBody.content['application/json'].schema;
    expect(body).to.deep.equal({ $ref: '#/components/schemas/pipeline.signup.Input' });
    expect(document.components).to.have.nested.property(
      'schemas.pipeline\\.signup\\.Input.additionalProperties',
      false,
    );
    expect(op('/register', 'post').operationId).to.not.equal('CreateUserCommand');

    const profile = op('/me/{userId}', 'get');
    expect(profile.security).to.deep.equal(PUBLIC_SECURITY);
    expect(profile['x-required-permissions']).to.deep.equal([]);
    expect(profile.parameters.map((p: { name: string; in: string }) => `${p.in} ${p.name}`)).to.include('path userId');
    expect(profile.responses['200'].content['application/json'].schema).to.deep.equal({
      $ref: '#/components/schemas/GetUserQuery.Output',
    });

    // No authentication step: the contract's permissions still apply (contract-router checks them), so a caller is needed.
    const people = op('/people', 'get');
    expect(people['x-required-permissions']).to.deep.equal(['users:read']);
    expect(people.security).to.deep.equal(TOKEN_SECURITY);
  });

  it('lists generated and hand-written routes both where both serve, and an excluded contract only where its pipeline serves it', () => {
    expect(op('/api/users/{userId}', 'get')).to.include({ 'x-message-type': 'GetUserQuery' });
    expect(op('/me/{userId}', 'get')).to.include({ 'x-message-type': 'GetUserQuery' });
    expect(op('/api/users', 'post'), 'CreateUserCommand is excluded from the generated routes').to.equal(undefined);
    expect(Object.keys(document.paths)).to.not.include('/legacy/*');
  });

  it('is a valid OpenAPI 3.1 document', async () => {
    const result = await validateOpenApi(document);
    expect(result.errors).to.equal(undefined);
    expect(result.valid).to.equal(true);
  });
});

describe("OpenAPI document of a runtime: hand-written routes follow the host's config", () => {
  const runtime = testRuntime();
  after(() => runtime.close());

  it('is built again when the host hands over a reloaded config', () => {
    runtime.discovery.registry.apply({
      service: 'users-service',
      instanceId: 'u1',
      ttlMs: 60_000,
      contracts: referenceContracts().filter((c) => c.targetService === 'users-service'),
    });
    const host = (gatewayConfig: unknown) =>
      gatewayConfigOf({
        config: { gatewayConfig, loadConfig: () => undefined },
        eventBus: { emit: () => undefined },
      });
    runtime.attachHost(host({}));
    expect(JSON.parse(runtime.documents.openApi.current().json).paths).to.not.have.property('/signup');
    runtime.attachHost(host(HAND_WRITTEN_CONFIG));
    expect(JSON.parse(runtime.documents.openApi.current().json).paths['/signup'].post).to.include({
      'x-pipeline': 'signup',
    });
  });
});

describe('excludeFromGeneratedRoutes without a hand-written route', () => {
  it('is logged once per config that shows it, naming the message type', () => {
    const warnings: string[] = [];
    const runtime = testRuntime(
      { excludeFromGeneratedRoutes: ['CreateUserCommand', 'CreateUserComand'] },
      { ...quiet, warn: (m: string) => void warnings.push(m) },
    );
    try {
      const host = gatewayConfigOf({
        config: { gatewayConfig: HAND_WRITTEN_CONFIG, loadConfig: () => undefined },
        eventBus: { emit: () => undefined },
      });
      runtime.attachHost(host);
      runtime.attachHost(host);
      expect(warnings).to.have.length(1);
      expect(warnings[0]).to.contain('names CreateUserComand;');
    } finally {
      void runtime.close();
    }
  });
});
