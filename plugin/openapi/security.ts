/**
 * Security schemes: Bearer JWTs, and the development headers, which the gateway reads only
 * when DEVELOPMENT_AUTH_ENABLED is exactly `true`.
 */
export const SECURITY_SCHEMES = {
  bearerAuth: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description: 'Access token (HS256 with the shared secret, or RS256 from the JWKS by `kid`). Permissions come from its `permissions` claim.',
  },
  devUserId: {
    type: 'apiKey',
    in: 'header',
    name: 'X-Dev-User-Id',
    description: 'DEVELOPMENT ONLY: honoured only when the gateway runs with DEVELOPMENT_AUTH_ENABLED=true; ignored otherwise. Acts as this user id, no token checked.',
  },
  devPermissions: {
    type: 'apiKey',
    in: 'header',
    name: 'X-Dev-Permissions',
    description: 'DEVELOPMENT ONLY: comma-separated permissions of the X-Dev-User-Id caller (absent = none). Ignored unless DEVELOPMENT_AUTH_ENABLED=true.',
  },
} as const;

/** Any one of these satisfies a protected operation. */
export const DEFAULT_SECURITY: Array<Record<string, string[]>> = [
  { bearerAuth: [] },
  { devUserId: [], devPermissions: [] },
  { devUserId: [] },
];

/** `security: []` marks an operation that needs no credentials (contract `public: true`). */
export const PUBLIC_SECURITY: Array<Record<string, string[]>> = [];
