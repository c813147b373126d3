import { POLICY_NAMES, policySchemaId } from '../../plugin/policy-names';
import { ROUTE_ACTION_SCHEMA_PROPERTIES } from '../../plugin/routing/route-action';

/** Action of a permission step. No additionalProperties: false — the host adds its own properties. */
export const schema = {
  $id: policySchemaId(POLICY_NAMES.permission),
  type: 'object',
  properties: {
    ...ROUTE_ACTION_SCHEMA_PROPERTIES,
    public: { type: 'boolean', description: 'hand-written pipelines: no check at all' },
    required: {
      type: 'array',
      items: { type: 'string', minLength: 1 },
      description:
        "permissions the caller must hold (hand-written pipelines; added to the contract's on generated ones)",
    },
  },
};
