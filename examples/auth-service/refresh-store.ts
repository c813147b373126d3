export type RevocationReason = 'logout' | 'password-change' | 'suspicious-activity' | 'user-deleted' | 'revoked';

interface Entry {
  userId: string;
  exp: number;
  revoked?: RevocationReason;
}

/** Issued refresh tokens by jti, so a refresh can be refused once revoked (logout, password change, a deleted user). */
export class RefreshStore {
  private readonly byJti = new Map<string, Entry>();

  add(jti: string, userId: string, exp: number): void {
    this.prune();
    this.byJti.set(jti, { userId, exp });
  }

  /** Usable: issued by us, not revoked, not expired. */
  isActive(jti: string): boolean {
    const e = this.byJti.get(jti);
    return e !== undefined && !e.revoked && e.exp * 1000 > Date.now();
  }

  ownerOf(jti: string): string | undefined {
    return this.byJti.get(jti)?.userId;
  }

  revoke(jti: string, reason: RevocationReason): boolean {
    const e = this.byJti.get(jti);
    if (!e || e.revoked) return false;
    e.revoked = reason;
    return true;
  }

  revokeAllOf(userId: string, reason: RevocationReason): number {
    let n = 0;
    for (const e of this.byJti.values()) {
      if (e.userId === userId && !e.revoked) {
        e.revoked = reason;
        n++;
      }
    }
    return n;
  }

  /** Expired entries can never be used again; dropping them keeps the map bounded by live tokens. */
  private prune(): void {
    const now = Date.now();
    for (const [jti, e] of this.byJti) if (e.exp * 1000 <= now) this.byJti.delete(jti);
  }
}
