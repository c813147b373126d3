import { ROUTE_ACTION_SCHEMA_PROPERTIES } from '../../plugin/routing/route-action';

/** No additionalProperties: false — the host adds its own properties to every action. */
export const schema = {
  $id: 'http://express-gateway.io/schemas/policies/contract-router.json',
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
