/** route-table takes no settings. No additionalProperties: false — the host adds its own properties. */
export const schema = {
  $id: 'http://express-gateway.io/schemas/policies/route-table.json',
  type: 'object',
  properties: {},
};
