import { POLICY_NAMES, policySchemaId } from '../../plugin/policy-names';
/** No options; no additionalProperties: false — the host adds its own properties to every action. */
export const schema = {
  $id: policySchemaId(POLICY_NAMES.notFound),
  type: 'object',
  properties: {},
};
