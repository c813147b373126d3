import { expect } from 'chai';
import { parse } from 'yaml';
import express from 'express';
import {
  contractPipeline,
  generatedPipeline,
  isContractEndpoint,
  preflightEndpoint,
  tableEndpoint,
} from '../../plugin/pipeline/generated-pipeline';
import { routeAction } from '../../plugin/routing/route-action';
import { GENERATED_POLICIES } from '../../plugin/policy-names';
import { buildEndpointSpecs } from '../../plugin/contracts/endpoint-specs';
import { corsAction } from '../../plugin/edge/cors';
import { renderGatewayConfig } from '../../plugin/config-writer/gateway-config';

const table = buildEndpointSpecs([
  {
    messageType: 'GetUserQuery',
    targetService: 'users',
    inputSchema: { type: 'object', properties: { userId: { type: 'string' } } },
    outputSchema: {},
    requiredPermissions: [],
  },
]);

describe('generated pipelines: the edge steps', () => {
  it('orders trace ▸ cors ▸ rate limit ▸ authentication ▸ permission ▸ validation ▸ router', () => {
    const cors = corsAction({ corsOrigins: '*', corsCredentials: true, corsAllowPatch: false });
    const steps = contractPipeline(cors);
    expect(steps.map((s) => Object.keys(s)[0])).to.deep.equal([
      'request-trace',
      'cors',
      'contract-rate-limit',
      'jwt-dev-auth',
      'permission',
      'schema-validation',
      'contract-router',
    ]);
    expect(steps[1]).to.deep.equal({ cors: [{ action: cors }] });
    // The shared pipeline's steps carry no route: it is on each endpoint entry.
    expect(steps[2]).to.deep.equal({ 'contract-rate-limit': [{ action: {} }] });
    const endpoint = table.endpoints.find((e) => e.name === 'contracts-get-api-users-userid')!;
    expect(isContractEndpoint(endpoint)).to.equal(true);
    expect(isContractEndpoint(preflightEndpoint('contracts-'))).to.equal(false);
    expect(routeAction(endpoint)).to.deep.equal({ messageType: 'GetUserQuery', kind: 'get' });
    expect([...GENERATED_POLICIES]).to.include.members(['cors', 'request-trace', 'contract-rate-limit']);
  });

  it('has one OPTIONS endpoint for every /api path, with trace and cors only, written before the contract routes', () => {
    const preflight = preflightEndpoint('contracts-');
    expect(preflight).to.deep.include({ name: 'contracts-options-api', method: 'OPTIONS', paths: ['/api', '/api/*'] });
    expect(generatedPipeline(preflight).map((s) => Object.keys(s)[0])).to.deep.equal(['request-trace', 'cors']);
    const text = renderGatewayConfig(
      'apiEndpoints: {}\npipelines: {}\npolicies: []\n',
      [preflight, ...table.endpoints],
      {
        prefix: 'contracts-',
        pipelinePolicies: (e) => generatedPipeline(e),
        requiredPolicyNames: [...GENERATED_POLICIES],
      },
    );
    const config = parse(text);
    expect(Object.keys(config.apiEndpoints)).to.deep.equal([
      'contracts-options-api',
      'contracts-get-api-users',
      'contracts-get-api-users-userid',
    ]);
    expect(config.apiEndpoints['contracts-options-api']).to.deep.equal({
      host: '*',
      paths: ['/api', '/api/*'],
      methods: ['OPTIONS'],
    });
    expect(config.policies).to.include.members(['cors', 'request-trace', 'contract-rate-limit']);
  });
});

describe('generated pipelines: the table endpoint (routing: table)', () => {
  /** The host mounts a pathRegex with `RegExp(pathRegex)` on an Express router: the same here. */
  async function mounted(pathRegex: string, url: string): Promise<Record<string, string> | undefined> {
    const router = express.Router();
    let params: Record<string, string> | undefined;
    router.all(RegExp(pathRegex), (req, _res, next) => {
      params = { ...req.params };
      next();
    });
    await new Promise<void>((resolve, reject) =>
      router({ method: 'GET', url } as express.Request, {} as express.Response, (err?: unknown) =>
        err ? reject(err) : resolve(),
      ),
    );
    return params;
  }

  it("matches what `paths: ['/api', '/api/*']` matched: in any case, with a trailing slash, and nothing else", async () => {
    const { pathRegex } = tableEndpoint('contracts-', ['/api/users', '/api/users/:userId']);
    for (const url of ['/api', '/api/', '/api/users', '/API/Users/u-1/', '/api/a/b/c?x=1'])
      expect(await mounted(pathRegex, url), url).to.not.equal(undefined);
    for (const url of ['/', '/apis', '/x/api', '/ap']) expect(await mounted(pathRegex, url), url).to.equal(undefined);
  });

  it('gives the request no path parameter for Express to copy at every step (a `*` path gave it `0`)', async () => {
    const { pathRegex } = tableEndpoint('contracts-', ['/api/users/:userId']);
    expect(await mounted(pathRegex, '/api/users/u-1')).to.deep.equal({});
  });

  it('covers every first segment the routes use: several roots, `/` itself, a parameter, a dot taken literally', async () => {
    const { pathRegex, path } = tableEndpoint('contracts-', ['/', '/api/a', '/v1.0/b']);
    expect(path).to.equal('/');
    for (const url of ['/', '/api/a', '/V1.0/b']) expect(await mounted(pathRegex, url), url).to.not.equal(undefined);
    for (const url of ['/v1x0/b', '/other']) expect(await mounted(pathRegex, url), url).to.equal(undefined);
    const param = tableEndpoint('contracts-', ['/:tenant/items']);
    expect(await mounted(param.pathRegex, '/acme/items')).to.deep.equal({});
    expect(await mounted(param.pathRegex, '/')).to.equal(undefined);
  });

  it('is written as a pathRegex entry, without paths', () => {
    const endpoint = tableEndpoint('contracts-', ['/api/users']);
    const config = parse(
      renderGatewayConfig('', [endpoint], {
        prefix: 'contracts-',
        pipelinePolicies: () => [],
        requiredPolicyNames: [],
      }),
    );
    expect(config.apiEndpoints['contracts-api']).to.deep.equal({ host: '*', pathRegex: endpoint.pathRegex });
  });
});
