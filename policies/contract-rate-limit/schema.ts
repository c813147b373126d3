import { POLICY_NAMES, policySchemaId } from '../../plugin/policy-names';
import { ROUTE_ACTION_SCHEMA_PROPERTIES } from '../../plugin/routing/route-action';

/**
 * Action of a contract-rate-limit step. Generated pipelines carry only the route fields (the limit comes from the
 * contract or the plugin settings); a hand-written pipeline may set its own `max`/`windowMs`.
 * No additionalProperties: false — the host adds its own properties.
 */
export const schema = {
  $id: policySchemaId(POLICY_NAMES.contractRateLimit),
  type: 'object',
  properties: {
    ...ROUTE_ACTION_SCHEMA_PROPERTIES,
    max: { type: 'integer', minimum: 1, description: 'hand-written pipelines: requests per caller per window' },
    windowMs: {
      type: 'integer',
      minimum: 1000,
      maximum: 86400000,
      description: 'hand-written pipelines: window length, default 60000',
    },
    scope: {
      type: 'string',
      pattern: '^[A-Za-z0-9_.-]{1,64}$',
      description: 'hand-written pipelines: counter name; pipelines with the same scope share budgets (default route)',
    },
  },
};
