/** No options; no additionalProperties: false — the host adds its own properties to every action. */
export const schema = {
  $id: 'http://express-gateway.io/schemas/policies/not-found.json',
  type: 'object',
  properties: {},
};
