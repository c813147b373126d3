import { randomUUID } from 'node:crypto';

export interface UserRecord {
  userId: string;
  email: string;
  firstName?: string;
  lastName?: string;
  name?: string;
  role: 'user' | 'admin';
  profile?: { firstName?: string; lastName?: string };
  permissions: string[];
  passwordHash?: string;
  /** Identities at external providers, provider → the provider's user id. */
  external?: Record<string, string>;
  createdAt: string;
  updatedAt: string;
}

/** In-memory users with a unique, case-insensitive email. */
export class UserStore {
  private readonly byId = new Map<string, UserRecord>();
  private readonly idByEmail = new Map<string, string>();

  all(): UserRecord[] {
    return [...this.byId.values()];
  }

  get(userId: string): UserRecord | undefined {
    return this.byId.get(userId);
  }

  findByEmail(email: string): UserRecord | undefined {
    const id = this.idByEmail.get(email.toLowerCase());
    return id ? this.byId.get(id) : undefined;
  }

  findByExternal(provider: string, externalUserId: string): UserRecord | undefined {
    for (const u of this.byId.values()) if (u.external?.[provider] === externalUserId) return u;
    return undefined;
  }

  emailTaken(email: string, exceptUserId?: string): boolean {
    const id = this.idByEmail.get(email.toLowerCase());
    return id !== undefined && id !== exceptUserId;
  }

  insert(fields: Omit<UserRecord, 'userId' | 'createdAt' | 'updatedAt'>): UserRecord {
    const now = new Date().toISOString();
    const user: UserRecord = { ...fields, userId: randomUUID(), createdAt: now, updatedAt: now };
    this.byId.set(user.userId, user);
    this.idByEmail.set(user.email.toLowerCase(), user.userId);
    return user;
  }

  update(userId: string, changes: Partial<Omit<UserRecord, 'userId' | 'createdAt'>>): UserRecord | undefined {
    const user = this.byId.get(userId);
    if (!user) return undefined;
    if (changes.email !== undefined && changes.email.toLowerCase() !== user.email.toLowerCase()) {
      this.idByEmail.delete(user.email.toLowerCase());
      this.idByEmail.set(changes.email.toLowerCase(), userId);
    }
    Object.assign(user, changes, { updatedAt: new Date().toISOString() });
    return user;
  }

  delete(userId: string): boolean {
    const user = this.byId.get(userId);
    if (!user) return false;
    this.byId.delete(userId);
    this.idByEmail.delete(user.email.toLowerCase());
    return true;
  }
}
