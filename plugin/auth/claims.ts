import type { MessageUser } from '../bus/transport';

/** The caller as the gateway hands it to services (message headers). */
export type AuthenticatedUser = MessageUser;

export type Claims = Record<string, unknown>;

/**
 * A token's permissions, in order:
 *   1. the `permissions` array (its string items);
 *   2. else the first claim (in the token's own order) whose name contains "permissions" (any case) and holds an
 *      array of strings, e.g. `https://example.com/permissions`;
 *   3. else a `scope` string, split on whitespace;
 *   4. else [].
 * Duplicates are dropped, order kept.
 */
export function extractPermissions(claims: Claims): string[] {
  if (Array.isArray(claims.permissions)) return unique(claims.permissions.filter(isString));
  for (const [name, value] of Object.entries(claims)) {
    if (name !== 'permissions' && /permissions/i.test(name) && Array.isArray(value) && value.every(isString)) {
      return unique(value);
    }
  }
  if (typeof claims.scope === 'string') return unique(claims.scope.split(/\s+/).filter((s) => s !== ''));
  return [];
}

/** True when `sub` is usable as the user id (a token without sub is rejected). */
export function hasValidSubject(claims: Claims): claims is Claims & { sub: string } {
  return typeof claims.sub === 'string' && claims.sub.trim() !== '';
}

/** Builds the AuthenticatedUser with its defaults: email `<sub>@unknown`, name = sub, permissions []. */
export function toAuthenticatedUser(claims: Claims & { sub: string }): AuthenticatedUser {
  const userId = claims.sub;
  const user: AuthenticatedUser = {
    userId,
    email: nonEmptyString(claims.email) ?? `${userId}@unknown`,
    name: nonEmptyString(claims.name) ?? userId,
    permissions: extractPermissions(claims),
  };
  if (Array.isArray(claims.roles)) user.roles = unique(claims.roles.filter(isString));
  return user;
}

/** A deep-frozen copy: one verified user shared by the requests of its token (token cache). */
export function frozenUser(user: AuthenticatedUser): AuthenticatedUser {
  const copy: AuthenticatedUser = { ...user, permissions: Object.freeze([...user.permissions]) as string[] };
  if (user.roles) copy.roles = Object.freeze([...user.roles]) as string[];
  return Object.freeze(copy);
}

function isString(v: unknown): v is string {
  return typeof v === 'string';
}

function nonEmptyString(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

function unique(items: string[]): string[] {
  return [...new Set(items)];
}
