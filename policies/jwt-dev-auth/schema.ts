import { POLICY_NAMES, policySchemaId } from '../../plugin/policy-names';
import { AUTH_OVERRIDE_SCHEMA_PROPERTIES } from '../../plugin/settings/auth';
import { ROUTE_ACTION_SCHEMA_PROPERTIES } from '../../plugin/routing/route-action';

/**
 * Action of a jwt-dev-auth step. The route fields come with generated pipelines; the rest override the
 * authentication settings (declared in plugin/settings/auth.ts). Prefer the environment for the secret. No additionalProperties: false — the host adds its own properties.
 */
export const schema = {
  $id: policySchemaId(POLICY_NAMES.jwtDevAuth),
  type: 'object',
  properties: {
    ...ROUTE_ACTION_SCHEMA_PROPERTIES,
    public: {
      type: 'boolean',
      description: 'hand-written pipelines: no authentication needed (a valid token still sets the user)',
    },
    ...AUTH_OVERRIDE_SCHEMA_PROPERTIES,
  },
};
