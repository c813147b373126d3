import { ADMIN_PERMISSION, type UserRecord } from './store';

/**
 * What a user may do, as tokens carry it: the permissions granted to them, plus `admin:all` for the admin role
 * (the gateway's permission check lets `admin:all` through everywhere).
 */
export function effectivePermissions(user: UserRecord): string[] {
  const perms = new Set(user.permissions);
  if (user.role === 'admin') perms.add(ADMIN_PERMISSION);
  return [...perms].sort();
}

export function subjectOf(user: UserRecord) {
  return {
    userId: user.userId,
    email: user.email,
    name: user.name ?? ([user.firstName, user.lastName].filter(Boolean).join(' ') || user.email),
    permissions: effectivePermissions(user),
    roles: [user.role],
  };
}
