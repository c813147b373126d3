import { POLICY_NAMES, policySchemaId } from '../../plugin/policy-names';
import { ROUTE_ACTION_SCHEMA_PROPERTIES } from '../../plugin/routing/route-action';

/**
 * The same route properties as contract-router (which contract the route serves), or an inline `schema`
 * for a hand-written pipeline. No additionalProperties: false — the host adds its own properties to every action.
 */
export const schema = {
  $id: policySchemaId(POLICY_NAMES.schemaValidation),
  type: 'object',
  properties: {
    ...ROUTE_ACTION_SCHEMA_PROPERTIES,
    schema: {
      type: 'object',
      description:
        'inline JSON Schema for the input (body + path parameters + query string); replaces the contract inputSchema',
    },
  },
};
