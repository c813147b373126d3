import { POLICY_NAMES, policySchemaId } from '../../plugin/policy-names';
import { ROUTE_ACTION_SCHEMA_PROPERTIES } from '../../plugin/routing/route-action';

/** No additionalProperties: false — the host adds its own properties to every action. */
export const schema = {
  $id: policySchemaId(POLICY_NAMES.contractRouter),
  type: 'object',
  properties: {
    ...ROUTE_ACTION_SCHEMA_PROPERTIES,
    timeoutMs: { type: 'integer', minimum: 1, description: 'overrides the contract timeout for this route' },
    public: {
      type: 'boolean',
      description:
        "hand-written pipelines: no permission check of the contract here (without a permission step before, the contract's requiredPermissions apply)",
    },
  },
};
