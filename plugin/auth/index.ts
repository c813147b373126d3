/** Authentication and permissions (docs/security.md); the policies live in policies/jwt-dev-auth and policies/permission. */
export { checkAuthConfig, resolveAuthConfig, isDevelopmentAuthEnv, AUTH_DEFAULTS, MIN_SECRET_LENGTH, type AuthConfig, type AuthOverrides } from '../settings/auth';
export { developmentModeWarning, warnIfDevelopmentMode, developmentUser } from './dev-auth';
export { extractPermissions, toAuthenticatedUser, type AuthenticatedUser } from './claims';
export { TokenVerifier, ACCEPTED_ALGORITHMS, type VerifierStats } from './verify-token';
export { RemoteKeySet, KeySetUnavailableError, UnknownKeyError } from './key-set';
export { TokenCache } from './token-cache';
export { TokenVerifiers } from './verifiers';
export { firstMissingPermission, ADMIN_ALL } from './permissions';
