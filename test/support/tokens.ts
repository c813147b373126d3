import { SignJWT } from 'jose';

/** The JWT_SECRET every test gateway gets unless a test sets its own. */
export const TEST_JWT_SECRET = 'test-secret-for-the-gateway-e2e-suite-0123456789';

/** An HS256 access token as the reference auth service would issue it. */
export function mintToken(
  claims: { sub?: string; permissions?: string[]; [k: string]: unknown } = {},
  secret = TEST_JWT_SECRET,
): Promise<string> {
  const { sub = 'test-user', ...rest } = claims;
  return new SignJWT(rest)
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(sub)
    .setIssuedAt()
    .setExpirationTime('1h')
    .sign(new TextEncoder().encode(secret));
}
