import { expect } from 'chai';
import { parse } from 'yaml';
import { GENERATED_POLICIES, contractPipeline, generatedPipeline, isContractEndpoint, preflightEndpoint, routeAction } from '../../plugin/pipeline/generated-pipeline';
import { buildRouteTable } from '../../plugin/contracts/route-table';
import { corsAction } from '../../plugin/edge/cors';
import { renderGatewayConfig } from '../../plugin/config-writer/gateway-config';

const table = buildRouteTable([
  { messageType: 'GetUserQuery', targetService: 'users', inputSchema: { type: 'object', properties: { userId: { type: 'string' } } }, outputSchema: {}, requiredPermissions: [] },
]);

describe('generated pipelines: the edge steps', () => {
  it('orders trace ▸ cors ▸ rate limit ▸ authentication ▸ permission ▸ validation ▸ router', () => {
    const cors = corsAction({ corsOrigins: '*', corsCredentials: true, corsAllowPatch: false });
    const steps = contractPipeline(cors);
    expect(steps.map((s) => Object.keys(s)[0])).to.deep.equal([
      'request-trace', 'cors', 'contract-rate-limit', 'jwt-dev-auth', 'permission', 'schema-validation', 'contract-router',
    ]);
    expect(steps[1]).to.deep.equal({ cors: [{ action: cors }] });
    // The shared pipeline's steps carry no route: it is on each endpoint entry.
    expect(steps[2]).to.deep.equal({ 'contract-rate-limit': [{ action: {} }] });
    const endpoint = table.endpoints.find((e) => e.name === 'contracts-get-api-users-userid')!;
    expect(isContractEndpoint(endpoint)).to.equal(true);
    expect(isContractEndpoint(preflightEndpoint('contracts-'))).to.equal(false);
    expect(routeAction(endpoint)).to.deep.equal({ messageType: 'GetUserQuery' });
    expect([...GENERATED_POLICIES]).to.include.members(['cors', 'request-trace', 'contract-rate-limit']);
  });

  it('has one OPTIONS endpoint for every /api path, with trace and cors only, written before the contract routes', () => {
    const preflight = preflightEndpoint('contracts-');
    expect(preflight).to.deep.include({ name: 'contracts-options-api', method: 'OPTIONS', paths: ['/api', '/api/*'] });
    expect(generatedPipeline(preflight).map((s) => Object.keys(s)[0])).to.deep.equal(['request-trace', 'cors']);
    const text = renderGatewayConfig('apiEndpoints: {}\npipelines: {}\npolicies: []\n', [preflight, ...table.endpoints], {
      prefix: 'contracts-',
      pipelinePolicies: (e) => generatedPipeline(e),
      requiredPolicyNames: [...GENERATED_POLICIES],
    });
    const config = parse(text);
    expect(Object.keys(config.apiEndpoints)).to.deep.equal(['contracts-options-api', 'contracts-get-api-users', 'contracts-get-api-users-userid']);
    expect(config.apiEndpoints['contracts-options-api']).to.deep.equal({ host: '*', paths: ['/api', '/api/*'], methods: ['OPTIONS'] });
    expect(config.policies).to.include.members(['cors', 'request-trace', 'contract-rate-limit']);
  });
});
