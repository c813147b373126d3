import '../auth/support';
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parse } from 'yaml';
import { createPolicies } from '../../policies';
import { contractAvailableCondition } from '../../conditions/contract-available';
import {
  closestKey,
  guardedCondition,
  guardedPolicy,
  pipelineProblem,
  unknownKey,
} from '../../plugin/host/pipeline-check';
import { keylessAuth } from '../../plugin/host/config-check';
import { contractPipeline, edgeSteps, tablePipeline } from '../../plugin/pipeline/generated-pipeline';
import { notFoundPolicies } from '../../plugin/config-writer/not-found-endpoint';
import { testRuntime } from '../support/runtime';
import type { Runtime } from '../../plugin/runtime';

// The host's own class: what it merges into every action before calling a policy's factory.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const ActionParams = require('express-gateway/lib/gateway/actionParams') as { prototype: object };

const ROOT = resolve(__dirname, '..', '..', '..');
const SECRET = 'a-secret-of-more-than-thirty-two-characters!';

/** A config with one hand-written pipeline of these policies on an endpoint of its own. */
function config(policies: unknown[], endpoint: Record<string, unknown> = { paths: '/orders' }): unknown {
  return { apiEndpoints: { orders: endpoint }, pipelines: { 'orders-create': { apiEndpoints: ['orders'], policies } } };
}

describe('pipeline check (unknown keys, unbound permission steps, keyless jwt-dev-auth)', () => {
  let runtime: Runtime;
  before(() => {
    runtime = testRuntime();
  });
  after(async () => runtime.close());

  const declared = () => [...createPolicies(runtime.services)];
  const conditions = () => [contractAvailableCondition(runtime.services)];

  it("names the issue's typo, its pipeline and step, and the key meant", () => {
    const problem = pipelineProblem(
      config([{ 'jwt-dev-auth': null }, { permission: [{ action: { requried: ['orders:create'] } }] }]),
      declared(),
      conditions(),
    );
    expect(problem).to.equal(
      'pipeline "orders-create", step permission: unknown key "requried" (did you mean "required"?)',
    );
  });

  it('refuses an unknown key in the action of every policy and in the condition, and lists the keys when none is close', () => {
    for (const policy of declared()) {
      const problem = unknownKey(policy, { zzzzzzzzzz: 1 });
      expect(problem, policy.name).to.match(/^unknown key "zzzzzzzzzz" \(/);
      const known = Object.keys(policy.schema.properties);
      expect(problem, policy.name).to.include(known.length ? known.join(', ') : 'takes no settings');
      for (const key of known)
        expect(unknownKey(policy, { [key]: undefined }), `${policy.name}.${key}`).to.equal(undefined);
    }
    const [condition] = conditions();
    expect(unknownKey(condition, { name: 'contract-available', messageTyp: 'X' }, ['name'])).to.equal(
      'unknown key "messageTyp" (did you mean "messageType"?)',
    );
  });

  it('accepts exactly what the host adds: the action as Express Gateway 1.16 hands it to the factory, and a condition with its name', () => {
    const refusal = () => undefined;
    for (const policy of declared()) {
      const hostAction = Object.assign({}, {}, ActionParams.prototype);
      expect(Object.keys(hostAction)).to.deep.equal(['getCommonAuthCallback']);
      const guarded = guardedPolicy(policy, refusal);
      const action =
        policy.name === 'permission' ? Object.assign({}, { required: ['x:y'] }, ActionParams.prototype) : hostAction;
      expect(() => (guarded.policy as (a: unknown) => unknown)(action), policy.name).not.to.throw();
      expect(
        () =>
          (guarded.policy as (a: unknown) => unknown)(Object.assign({}, { requried: ['x'] }, ActionParams.prototype)),
        policy.name,
      ).to.throw(`${policy.name}: unknown key "requried"`);
    }
    const condition = guardedCondition(conditions()[0], refusal);
    expect(condition.handler.length).to.equal(1);
    expect(condition.handler({ name: 'contract-available', messageType: 'NoSuchQuery' } as never)).to.be.a('function');
    expect(() => condition.handler({ name: 'contract-available', messagetype: 'X' } as never)).to.throw(
      'contract-available: unknown key "messagetype" (did you mean "messageType"?)',
    );
  });

  it('a refused config makes every factory throw, so the host keeps the routes it had', () => {
    const refusal = () => 'pipeline "x", step permission: …';
    for (const policy of declared())
      expect(() => (guardedPolicy(policy, refusal).policy as (a: unknown) => unknown)({}), policy.name).to.throw('…');
    expect(() =>
      guardedCondition(conditions()[0], refusal).handler({ name: 'contract-available', messageType: 'X' } as never),
    ).to.throw('…');
  });

  it('refuses a misspelt step key, and unknown keys of the condition nested in the host conditions', () => {
    expect(
      pipelineProblem(config([{ permission: [{ actoin: { required: ['a:b'] } }] }]), declared(), conditions()),
    ).to.equal('pipeline "orders-create", step permission: unknown key "actoin" in the step (did you mean "action"?)');
    const nested = { name: 'not', condition: { name: 'contract-available', messagType: 'GetReportQuery' } };
    expect(
      pipelineProblem(
        config([{ proxy: [{ condition: nested, action: { serviceEndpoint: 'x' } }] }]),
        declared(),
        conditions(),
      ),
    ).to.equal(
      'pipeline "orders-create", step proxy: condition contract-available: unknown key "messagType" (did you mean "messageType"?)',
    );
  });

  it('a permission step needs `required`, `public: true` or a contract', () => {
    const unbound = /step permission: its action has neither `required`, `public: true` nor a `messageType`/;
    for (const steps of [null, [{}], [{ action: {} }], [{ action: { public: false } }]]) {
      expect(
        pipelineProblem(config([{ 'jwt-dev-auth': null }, { permission: steps }]), declared(), conditions()),
        JSON.stringify(steps),
      ).to.match(unbound);
    }
    for (const action of [
      { required: [] },
      { required: ['a:b'] },
      { public: true },
      { messageType: 'CreateOrderCommand' },
      { dispatch: 'body', messageTypes: ['A'] },
    ]) {
      expect(
        pipelineProblem(config([{ permission: [{ action }] }]), declared(), conditions()),
        JSON.stringify(action),
      ).to.equal(undefined);
    }
    // The routes of the generated pipelines: `contract:` on every endpoint, or the route-table step before.
    const generated = { paths: '/api/orders', contract: { messageType: 'CreateOrderCommand' } };
    expect(pipelineProblem(config([{ permission: [{ action: {} }] }], generated), declared(), conditions())).to.equal(
      undefined,
    );
    expect(
      pipelineProblem(
        config([{ 'route-table': [{ action: {} }] }, { permission: [{ action: {} }] }]),
        declared(),
        conditions(),
      ),
    ).to.equal(undefined);
    expect(
      pipelineProblem(
        config([{ permission: [{ action: {} }] }, { 'route-table': [{ action: {} }] }]),
        declared(),
        conditions(),
      ),
    ).to.match(unbound);
  });

  it('finds nothing wrong in the shipped configs and in what the config writer generates', () => {
    for (const file of ['config/gateway.config.yml', 'deploy/gateway.config.example.yml']) {
      expect(pipelineProblem(parse(readFileSync(join(ROOT, file), 'utf8')), declared(), conditions()), file).to.equal(
        undefined,
      );
    }
    // The pipelines the writer generates (plugin/config-writer/config-sync.ts): contract routes, the table, preflight, 404.
    const generated = {
      apiEndpoints: {
        'contracts-post-api-orders': {
          paths: ['/api/orders'],
          methods: ['POST'],
          contract: { messageType: 'CreateOrderCommand' },
        },
        'contracts-api': { pathRegex: '^/api(?:/.*)?$' },
        'contracts-options-api': { paths: ['/api', '/api/*'], methods: ['OPTIONS'] },
        'contracts-not-found': { paths: ['/api', '/api/*'] },
      },
      pipelines: {
        'contracts-routes': { apiEndpoints: ['contracts-post-api-orders'], policies: contractPipeline() },
        'contracts-api': { apiEndpoints: ['contracts-api'], policies: tablePipeline() },
        'contracts-options-api': { apiEndpoints: ['contracts-options-api'], policies: edgeSteps() },
        'contracts-not-found': { apiEndpoints: ['contracts-not-found'], policies: notFoundPolicies() },
      },
    };
    expect(pipelineProblem(JSON.parse(JSON.stringify(generated)), declared(), conditions())).to.equal(undefined);
  });

  it('suggests only near keys', () => {
    expect(closestKey('requried', ['public', 'required'])).to.equal('required');
    expect(closestKey('Required', ['required'])).to.equal('required');
    expect(closestKey('timeout', ['timeoutMs', 'messageType'])).to.equal('timeoutMs');
    expect(closestKey('permissions', ['public', 'required'])).to.equal(undefined);
  });

  it('jwt-dev-auth without a key source: refused for the generated routes and for a step, unless a secret, key set or development mode is there', () => {
    const steps = config([{ 'jwt-dev-auth': [{ action: { public: true } }] }]);
    expect(keylessAuth({}, true, {})).to.match(
      /^jwt-dev-auth of the generated routes has no key to verify tokens with: set JWT_SECRET \(HS256\) or JWKS_URI \(RS256\)/,
    );
    expect(keylessAuth(steps, false, {})).to.match(
      /^pipeline "orders-create", step jwt-dev-auth: no key to verify tokens with/,
    );
    expect(keylessAuth(config([{ 'jwt-dev-auth': null }]), false, {})).to.match(/step jwt-dev-auth: no key/);
    expect(keylessAuth({}, false, {})).to.equal(undefined);
    for (const env of [
      { JWT_SECRET: SECRET },
      { JWKS_URI: 'https://idp.example/jwks.json' },
      { DEVELOPMENT_AUTH_ENABLED: 'true' },
    ]) {
      expect(keylessAuth(steps, true, env), JSON.stringify(env)).to.equal(undefined);
    }
    expect(keylessAuth(config([{ 'jwt-dev-auth': [{ action: { jwtSecret: SECRET } }] }]), false, {})).to.equal(
      undefined,
    );
    expect(
      keylessAuth(config([{ 'jwt-dev-auth': [{ action: { jwksUri: 'https://idp.example/jwks.json' } }] }]), false, {}),
    ).to.equal(undefined);
  });
});
