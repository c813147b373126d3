/**
 * The names of the plugin's policies and condition, and of the host's policy a generated pipeline uses: the one
 * place each is written. The manifest registers the policies and the condition under them, the config writer writes
 * them into the generated pipelines and the config's `policies:`, and the pipeline check and the OpenAPI writer find
 * the steps of hand-written pipelines by them. test/policy-names.test.ts fails when one of these names is written as
 * a string anywhere else in plugin/, policies/ or conditions/.
 */
export const POLICY_NAMES = {
  /** `routing: table`: the first step of the one table endpoint; finds the request's route in the path table. */
  routeTable: 'route-table',
  /** The first step of every generated pipeline: the trace ids on every answer. */
  requestTrace: 'request-trace',
  /** The host's rate limit, keyed by the verified caller or the client address; before authentication. */
  contractRateLimit: 'contract-rate-limit',
  /** Who the caller is. */
  jwtDevAuth: 'jwt-dev-auth',
  /** Whether the caller may use the route; a hand-written one names `required`, `public` or a contract. */
  permission: 'permission',
  /** The body against the contract's input schema, or the step's inline `schema`. */
  schemaValidation: 'schema-validation',
  /** Sends the message onto the bus and answers with the reply; the last step of a pipeline that serves a contract. */
  contractRouter: 'contract-router',
  /** The catch-all under /api of the last generated pipeline: the JSON 404. */
  notFound: 'not-found',
} as const;

export type PolicyName = (typeof POLICY_NAMES)[keyof typeof POLICY_NAMES];

/** The host's CORS policy: the second step of every generated pipeline, before anything that can refuse. */
export const HOST_CORS = 'cors';

export const CONDITION_NAMES = {
  /** True while a service announces the step's message type. */
  contractAvailable: 'contract-available',
} as const;

type ConditionName = (typeof CONDITION_NAMES)[keyof typeof CONDITION_NAMES];

/**
 * The plugin's policies as the manifest registers them: in the order of a generated pipeline (the host's `cors`
 * left out; route-table only with `routing: table`), then the 404.
 */
export const PLUGIN_POLICIES: readonly PolicyName[] = [
  POLICY_NAMES.routeTable,
  POLICY_NAMES.requestTrace,
  POLICY_NAMES.contractRateLimit,
  POLICY_NAMES.jwtDevAuth,
  POLICY_NAMES.permission,
  POLICY_NAMES.schemaValidation,
  POLICY_NAMES.contractRouter,
  POLICY_NAMES.notFound,
];

/**
 * The request lifecycle of a generated route, in order (docs/design.md "One request"):
 *   request-trace ▸ cors ▸ contract-rate-limit ▸ jwt-dev-auth ▸ permission ▸ schema-validation ▸ contract-router
 * - request-trace first: X-Correlation-Id / X-Request-Id are on every answer, the preflight cors ends included.
 * - cors (the host's policy) before anything that can refuse: a preflight gets its 204 without credentials, and
 *   401/403/404/429 answers carry the CORS headers a browser needs to read them.
 * - contract-rate-limit (the host's rate-limit underneath) before authentication: it keys by
 *   the user that the shared token verifier confirms (cached, so jwt-dev-auth does not verify the token again) or by
 *   the client address, so floods of bad tokens are limited too and an unverified `sub` never picks the budget.
 * Each policy listed here lands in every generated pipeline (plugin/pipeline/generated-pipeline.ts) and in
 * gateway.config.yml's `policies:`.
 */
export const GENERATED_POLICIES = [
  POLICY_NAMES.requestTrace,
  HOST_CORS,
  POLICY_NAMES.contractRateLimit,
  POLICY_NAMES.jwtDevAuth,
  POLICY_NAMES.permission,
  POLICY_NAMES.schemaValidation,
  POLICY_NAMES.contractRouter,
] as const;

/** The `$id` of a policy's action schema, as the host's own policies name theirs. */
export function policySchemaId(name: PolicyName): string {
  return `http://express-gateway.io/schemas/policies/${name}.json`;
}

/** The `$id` of a condition's config schema. */
export function conditionSchemaId(name: ConditionName): string {
  return `http://express-gateway.io/schemas/conditions/${name}.json`;
}
