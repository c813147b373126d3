import { POLICY_NAMES, policySchemaId } from '../../plugin/policy-names';
/** route-table takes no settings. No additionalProperties: false — the host adds its own properties. */
export const schema = {
  $id: policySchemaId(POLICY_NAMES.routeTable),
  type: 'object',
  properties: {},
};
