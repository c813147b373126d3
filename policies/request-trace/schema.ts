/** request-trace takes no settings. No additionalProperties: false — the host adds its own properties. */
export const schema = {
  $id: 'http://express-gateway.io/schemas/policies/request-trace.json',
  type: 'object',
  properties: {},
};
