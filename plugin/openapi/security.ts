/**
 * Security schemes: Bearer JWTs, and the development headers, which the gateway reads only
 * when DEVELOPMENT_AUTH_ENABLED is exactly `true` (and the document lists only then: securityOf).
 */
const SECURITY_SCHEMES = {
  bearerAuth: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description:
      'Access token (HS256 with the shared secret, or RS256 from the JWKS by `kid`). Permissions come from its `permissions` claim.',
  },
  devUserId: {
    type: 'apiKey',
    in: 'header',
    name: 'X-Dev-User-Id',
    description:
      'DEVELOPMENT ONLY: honoured only when the gateway runs with DEVELOPMENT_AUTH_ENABLED=true; ignored otherwise. Acts as this user id, no token checked.',
  },
  devPermissions: {
    type: 'apiKey',
    in: 'header',
    name: 'X-Dev-Permissions',
    description:
      'DEVELOPMENT ONLY: comma-separated permissions of the X-Dev-User-Id caller (absent = none). Ignored unless DEVELOPMENT_AUTH_ENABLED=true.',
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

/** What a protected operation accepts while development auth is off: a token only. */
export const TOKEN_SECURITY: Array<Record<string, string[]>> = [{ bearerAuth: [] }];

type Paths = Record<string, Record<string, unknown>>;

/**
 * The security schemes and default requirement of a document, and its paths with each operation's requirements
 * limited to what the gateway accepts: without development auth, no requirement naming its headers is offered.
 */
export function securityOf(
  paths: Paths,
  developmentAuth: boolean,
): { schemes: Record<string, unknown>; security: typeof DEFAULT_SECURITY; paths: Paths } {
  if (developmentAuth) return { schemes: SECURITY_SCHEMES, security: DEFAULT_SECURITY, paths };
  const tokenOnly = (requirement: Record<string, string[]>): boolean =>
    Object.keys(requirement).every((k) => k === 'bearerAuth');
  const limited: Paths = {};
  for (const [path, item] of Object.entries(paths)) {
    limited[path] = Object.fromEntries(
      Object.entries(item).map(([method, op]) => {
        const security = (op as { security?: Array<Record<string, string[]>> }).security;
        return [
          method,
          security && security.length > 0 ? { ...(op as object), security: security.filter(tokenOnly) } : op,
        ];
      }),
    );
  }
  return { schemes: { bearerAuth: SECURITY_SCHEMES.bearerAuth }, security: TOKEN_SECURITY, paths: limited };
}
