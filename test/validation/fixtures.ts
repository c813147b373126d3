/** A user schema with writeOnly fields at two depths: what a service must never see echoed back to clients. */
export const userWithWriteOnly = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    password: { type: 'string', writeOnly: true },
    profile: {
      type: 'object',
      properties: { firstName: { type: 'string' }, pin: { type: 'string', writeOnly: true } },
    },
  },
};
