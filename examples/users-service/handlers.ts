import bcrypt from 'bcryptjs';
import { ServiceError, answer, type HandlerContext } from '../../sdk';
import { changeWithAnswer } from '../storage/answered';
import type { SqlClient } from '../storage/database';
import { ADMIN_PERMISSION, EmailTaken, type UserChanges, type UserRecord, type UserStore } from './store';
import { effectivePermissions } from './permissions';

type Input = Record<string, unknown>;
export type PublicUser = Omit<UserRecord, 'passwordHash'> & { id: string };

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const int = (v: unknown): number | undefined => (typeof v === 'number' && Number.isInteger(v) ? v : undefined);

/**
 * The user as it leaves the service: with `id` beside `userId`, never the password hash, and the permissions a
 * login grants (an administrator's admin:all included), so a listing shows what the user's tokens carry.
 */
function toPublic(user: UserRecord): PublicUser {
  const { passwordHash: _hidden, ...rest } = user;
  return { ...rest, permissions: effectivePermissions(user), id: user.userId };
}

function notFound(userId: string): ServiceError {
  return new ServiceError('NOT_FOUND', `User ${userId} does not exist`, { resourceType: 'User', resourceId: userId });
}

function emailConflict(): ServiceError {
  return new ServiceError('RESOURCE_CONFLICT', 'A user with this email already exists', { conflictingField: 'email' });
}

/**
 * The admin role carries admin:all, and granting a permission needs admin:all, so giving a role (creating a user
 * with a role other than `user`, or changing anyone's role, one's own included) needs admin:all too: otherwise
 * users:create or users:update alone would make an administrator.
 */
function mayAssignRoles(ctx: HandlerContext | undefined): boolean {
  return ctx?.user?.permissions.includes(ADMIN_PERMISSION) === true;
}

function roleRefused(): ServiceError {
  return new ServiceError(
    'INSUFFICIENT_PERMISSIONS',
    `Giving a role other than user, or changing a role, needs ${ADMIN_PERMISSION}`,
    { requiredPermission: ADMIN_PERMISSION },
  );
}

/**
 * Refuses a change that takes admin:all from the one account left holding it (an instance with no administrator
 * could only be repaired in the database), unless `keepsIt` says the account still holds it afterwards (by grant).
 * Runs in the change's transaction, which then holds the administrators' rows until it ends.
 */
async function keepAnAdministrator(
  store: UserStore,
  tx: SqlClient,
  userId: string,
  keepsIt: (user: UserRecord) => boolean = () => false,
): Promise<void> {
  const admins = await store.lockAdministrators(tx);
  if (admins.length !== 1 || admins[0] !== userId) return;
  const user = await store.get(userId, tx);
  if (user && keepsIt(user)) return;
  throw new ServiceError(
    'POLICY_VIOLATION',
    `This is the last account holding ${ADMIN_PERMISSION}: make another administrator before deleting it or taking its admin role`,
  );
}

/** The database's unique index decides who has an email, so two concurrent creates give one user and one 409. */
function conflictIfTaken(err: unknown): never {
  throw err instanceof EmailTaken ? emailConflict() : err;
}

/**
 * Handlers of the users API. Input has passed the contract's schema at the gateway (once that policy runs). A
 * command's change and its idempotency answer commit in one transaction (changeWithAnswer).
 */
export function userHandlers(store: UserStore, opts: { bcryptRounds?: number } = {}) {
  const rounds = opts.bcryptRounds ?? 10;
  const { db } = store;

  return {
    async create(input: Input, ctx?: HandlerContext) {
      const email = str(input.email);
      if (!email)
        throw new ServiceError('MISSING_REQUIRED_FIELD', 'email is required', { details: { email: 'is required' } });
      const role = input.role === 'admin' ? ('admin' as const) : ('user' as const);
      if (role !== 'user' && !mayAssignRoles(ctx)) throw roleRefused();
      // Spares the hash when the answer is already known; the insert below is what enforces it.
      if (await store.findByEmail(email)) throw emailConflict();
      const profile = input.profile && typeof input.profile === 'object' ? (input.profile as Input) : undefined;
      const firstName = str(input.firstName) ?? str(profile?.firstName);
      const lastName = str(input.lastName) ?? str(profile?.lastName);
      const name = str(input.name) ?? ([firstName, lastName].filter(Boolean).join(' ') || undefined);
      const password = str(input.password);
      // Hashed before the transaction, which should hold its connection (the embedded database: all of it) briefly.
      const passwordHash = password ? await bcrypt.hash(password, rounds) : undefined;
      const fields = {
        email,
        firstName,
        lastName,
        name,
        role,
        profile: profile ? { firstName: str(profile.firstName), lastName: str(profile.lastName) } : undefined,
        permissions: [],
        passwordHash,
      };
      return changeWithAnswer(db, ctx, async (tx) => {
        const user = await store.insert(fields, undefined, tx).catch(conflictIfTaken);
        return answer(
          { ...toPublic(user), success: true },
          { status: 201, location: `/api/users/${encodeURIComponent(user.userId)}` },
        );
      });
    },

    async get(input: Input) {
      const userId = String(input.userId);
      const user = await store.get(userId);
      if (!user) throw notFound(userId);
      const full = toPublic(user) as unknown as Record<string, unknown>;
      const fields = str(input.fields)
        ?.split(',')
        .map((f) => f.trim())
        .filter(Boolean);
      if (!fields?.length) return full;
      const chosen = Object.fromEntries(fields.filter((f) => f in full).map((f) => [f, full[f]]));
      return { ...chosen, userId: user.userId, id: user.userId };
    },

    async update(input: Input, ctx?: HandlerContext) {
      const userId = String(input.userId);
      const changes: UserChanges = {};
      const email = str(input.email);
      if (email !== undefined) changes.email = email;
      for (const key of ['firstName', 'lastName', 'name'] as const) {
        const v = str(input[key]);
        if (v !== undefined) changes[key] = v;
      }
      if (input.role === 'user' || input.role === 'admin') {
        if (mayAssignRoles(ctx)) changes.role = input.role;
        // Without admin:all the role given must be the one the user has; it is then left as it is, not written.
        else if ((await store.get(userId))?.role !== input.role) throw roleRefused();
      }
      return changeWithAnswer(db, ctx, async (tx) => {
        // A permission granted apart from the role stays when the role goes.
        if (changes.role === 'user')
          await keepAnAdministrator(store, tx, userId, (u) => u.permissions.includes(ADMIN_PERMISSION));
        const user = await store.update(userId, changes, tx).catch(conflictIfTaken);
        if (!user) throw notFound(userId);
        return toPublic(user);
      });
    },

    async delete(input: Input, ctx?: HandlerContext) {
      const userId = String(input.userId);
      return changeWithAnswer(db, ctx, async (tx) => {
        await keepAnAdministrator(store, tx, userId);
        if (!(await store.delete(userId, tx))) throw notFound(userId);
        return undefined;
      });
    },

    async permissions(input: Input) {
      const userId = String(input.userId);
      const user = await store.get(userId);
      if (!user) throw notFound(userId);
      return { userId, permissions: effectivePermissions(user), roles: [user.role] };
    },

    async grant(input: Input, ctx?: HandlerContext) {
      const userId = String(input.userId);
      const permission = String(input.permission);
      return changeWithAnswer(db, ctx, async (tx) => {
        const user = await store.grant(userId, permission, tx);
        if (!user) throw notFound(userId);
        return { userId, permission, permissions: effectivePermissions(user) };
      });
    },

    async list(input: Input) {
      // The limit/offset variant and the page/pageSize form describe the same window.
      const limit = int(input.limit);
      const offset = int(input.offset);
      const pageSize = Math.min(100, Math.max(1, limit ?? int(input.pageSize) ?? 20));
      const start = offset !== undefined ? Math.max(0, offset) : (Math.max(1, int(input.page) ?? 1) - 1) * pageSize;
      const page = Math.floor(start / pageSize) + 1;
      const { users, totalCount } = await store.list({
        role: str(input.role),
        search: str(input.search)?.toLowerCase(),
        sort: str(input.sort),
        order: input.order === 'desc' ? 'desc' : 'asc',
        offset: start,
        limit: pageSize,
      });
      const totalPages = Math.ceil(totalCount / pageSize);
      return {
        users: users.map(toPublic),
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
