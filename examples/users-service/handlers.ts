import bcrypt from 'bcryptjs';
import { ServiceError, answer } from '../../sdk';
import type { UserRecord, UserStore } from './store';
import { effectivePermissions } from './permissions';

type Input = Record<string, unknown>;
export type PublicUser = Omit<UserRecord, 'passwordHash' | 'external'> & { id: string };

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const int = (v: unknown): number | undefined => (typeof v === 'number' && Number.isInteger(v) ? v : undefined);

/** The user as it leaves the service: with `id` beside `userId`, never the password hash. */
export function toPublic(user: UserRecord): PublicUser {
  const { passwordHash: _hidden, external: _links, ...rest } = user;
  return { ...rest, id: user.userId };
}

function notFound(userId: string): ServiceError {
  return new ServiceError('NOT_FOUND', `User ${userId} does not exist`, { resourceType: 'User', resourceId: userId });
}

function emailConflict(): ServiceError {
  return new ServiceError('RESOURCE_CONFLICT', 'A user with this email already exists', { conflictingField: 'email' });
}

/** Handlers of the users API. Input has passed the contract's schema at the gateway (once that policy runs). */
export function userHandlers(store: UserStore, opts: { bcryptRounds?: number } = {}) {
  const rounds = opts.bcryptRounds ?? 10;

  return {
    async create(input: Input) {
      const email = str(input.email);
      if (!email) throw new ServiceError('MISSING_REQUIRED_FIELD', 'email is required', { details: { email: 'is required' } });
      if (store.emailTaken(email)) throw emailConflict();
      const profile = input.profile && typeof input.profile === 'object' ? (input.profile as Input) : undefined;
      const firstName = str(input.firstName) ?? str(profile?.firstName);
      const lastName = str(input.lastName) ?? str(profile?.lastName);
      const name = str(input.name) ?? ([firstName, lastName].filter(Boolean).join(' ') || undefined);
      const password = str(input.password);
      const user = store.insert({
        email,
        firstName,
        lastName,
        name,
        role: input.role === 'admin' ? 'admin' : 'user',
        profile: profile ? { firstName: str(profile.firstName), lastName: str(profile.lastName) } : undefined,
        permissions: [],
        passwordHash: password ? await bcrypt.hash(password, rounds) : undefined,
      });
      return answer({ ...toPublic(user), success: true }, { status: 201, location: `/api/users/${encodeURIComponent(user.userId)}` });
    },

    get(input: Input) {
      const userId = String(input.userId);
      const user = store.get(userId);
      if (!user) throw notFound(userId);
      const full = toPublic(user) as unknown as Record<string, unknown>;
      const fields = str(input.fields)?.split(',').map((f) => f.trim()).filter(Boolean);
      if (!fields?.length) return full;
      return Object.fromEntries(fields.filter((f) => f in full).map((f) => [f, full[f]]));
    },

    update(input: Input) {
      const userId = String(input.userId);
      if (!store.get(userId)) throw notFound(userId);
      const changes: Partial<UserRecord> = {};
      const email = str(input.email);
      if (email !== undefined) {
        if (store.emailTaken(email, userId)) throw emailConflict();
        changes.email = email;
      }
      for (const key of ['firstName', 'lastName', 'name'] as const) {
        const v = str(input[key]);
        if (v !== undefined) changes[key] = v;
      }
      if (input.role === 'user' || input.role === 'admin') changes.role = input.role;
      return toPublic(store.update(userId, changes)!);
    },

    delete(input: Input) {
      const userId = String(input.userId);
      if (!store.delete(userId)) throw notFound(userId);
      return undefined;
    },

    permissions(input: Input) {
      const userId = String(input.userId);
      const user = store.get(userId);
      if (!user) throw notFound(userId);
      return { userId, permissions: effectivePermissions(user), roles: [user.role] };
    },

    grant(input: Input) {
      const userId = String(input.userId);
      const user = store.get(userId);
      if (!user) throw notFound(userId);
      const permission = String(input.permission);
      if (!user.permissions.includes(permission)) store.update(userId, { permissions: [...user.permissions, permission].sort() });
      return { userId, permission, permissions: effectivePermissions(store.get(userId)!) };
    },

    list(input: Input) {
      // The limit/offset variant and the page/pageSize form describe the same window.
      const limit = int(input.limit);
      const offset = int(input.offset);
      const pageSize = Math.min(100, Math.max(1, limit ?? int(input.pageSize) ?? 20));
      const start = offset !== undefined ? Math.max(0, offset) : (Math.max(1, int(input.page) ?? 1) - 1) * pageSize;
      const page = Math.floor(start / pageSize) + 1;

      let users = store.all();
      const role = str(input.role);
      if (role) users = users.filter((u) => u.role === role);
      const search = str(input.search)?.toLowerCase();
      if (search) {
        users = users.filter((u) => [u.name, u.firstName, u.lastName, u.email].some((v) => v?.toLowerCase().includes(search)));
      }
      const sort = str(input.sort) as keyof UserRecord | undefined;
      if (sort) {
        const dir = input.order === 'desc' ? -1 : 1;
        users = [...users].sort((a, b) => dir * String(a[sort] ?? '').localeCompare(String(b[sort] ?? '')));
      }
      const totalCount = users.length;
      const totalPages = Math.ceil(totalCount / pageSize);
      return {
        users: users.slice(start, start + pageSize).map(toPublic),
        page,
        pageSize,
        totalCount,
        totalPages,
        hasNext: start + pageSize < totalCount,
        hasPrevious: start > 0,
      };
    },
  };
}
