import type { AuthenticatedUser } from './claims';

/** Holding this grants every permission (administrators' tokens carry it). */
const ADMIN_ALL = 'admin:all';

/**
 * The first of `required` the user does not hold, in the order given; undefined when all are held.
 * Exact, case-sensitive match: no wildcards other than admin:all.
 */
export function firstMissingPermission(user: AuthenticatedUser, required: readonly string[]): string | undefined {
  // A user holds a handful of permissions: a scan beats building a Set on every request.
  const held = user.permissions;
  if (held.includes(ADMIN_ALL)) return undefined;
  for (const p of required) if (!held.includes(p)) return p;
  return undefined;
}
