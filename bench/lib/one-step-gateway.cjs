'use strict';
/**
 * Preloaded (`--require`) into the gateway of the benchmark's (b1): issue 37 item 6's prototype, not shipped. The
 * generated pipelines become request-trace ▸ cors ▸ contract-rate-limit ▸ contract-endpoint, where
 * `contract-endpoint` is one host step running jwt-dev-auth's, permission's, schema-validation's and
 * contract-router's own steps in one runner (bench/lib/one-step.cjs). Everything else is (b)'s gateway.
 * How, without a line of plugin/ changed: the list of generated policies is one array the pipeline writer and the
 * config's `policies:` read, so its four last names are replaced by the new one; and createPolicies (which the
 * manifest calls on every init) gets the new policy added to what it returns.
 * Env: BENCH_ROOT, the checkout whose dist/ runs.
 */
const path = require('node:path');
const { oneStep } = require('./one-step.cjs');

const DIST = path.join(path.resolve(process.env.BENCH_ROOT), 'dist');
const NAME = 'contract-endpoint';
const names = require(path.join(DIST, 'plugin', 'policy-names.js'));
const policies = require(path.join(DIST, 'policies', 'index.js'));
const { schema: routerSchema } = require(path.join(DIST, 'policies', 'contract-router', 'schema.js'));

const { jwtDevAuth, permission, schemaValidation, contractRouter } = names.POLICY_NAMES;
const merged = [jwtDevAuth, permission, schemaValidation, contractRouter];
const at = names.GENERATED_POLICIES.indexOf(jwtDevAuth);
if (names.GENERATED_POLICIES.slice(at).join() !== merged.join())
  throw new Error(
    `one-step-gateway: the generated pipeline is not what this prototype expects: ${names.GENERATED_POLICIES}`,
  );
names.GENERATED_POLICIES.splice(at, merged.length, NAME);

const createPolicies = policies.createPolicies;
policies.createPolicies = (services) => {
  const made = createPolicies(services);
  const parts = merged.map((name) => made.find((p) => p.name === name));
  const schema = { ...routerSchema, $id: `http://express-gateway.io/schemas/policies/${NAME}.json` };
  return [...made, { name: NAME, schema, policy: (action) => oneStep(DIST, parts, action) }];
};
