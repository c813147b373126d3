import { POLICY_NAMES, policySchemaId } from '../../plugin/policy-names';
/** request-trace takes no settings. No additionalProperties: false — the host adds its own properties. */
export const schema = {
  $id: policySchemaId(POLICY_NAMES.requestTrace),
  type: 'object',
  properties: {},
};
