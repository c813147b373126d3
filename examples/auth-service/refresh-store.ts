import type { SqlClient } from '../storage/database';

export type RevocationReason = 'logout' | 'password-change' | 'suspicious-activity' | 'user-deleted' | 'revoked';

/**
 * Issued refresh tokens by jti, in the database so that every auth-service instance refuses a revoked one
 * (logout, password change, a deleted user). A revoked token keeps its reason and time until it expires. Each
 * write takes the client of the caller's transaction when it has one.
 */
export class RefreshStore {
  constructor(private readonly db: SqlClient) {}

  async add(jti: string, userId: string, exp: number, client: SqlClient = this.db): Promise<void> {
    // Expired tokens can never be used again: dropping them keeps the table bounded by live tokens.
    await client.query('delete from refresh_tokens where expires_at <= now()');
    await client.query('insert into refresh_tokens (jti, user_id, expires_at) values ($1, $2, to_timestamp($3))', [
      jti,
      userId,
      exp,
    ]);
  }

  /** Usable: issued by us, not revoked, not expired. */
  async isActive(jti: string): Promise<boolean> {
    const { rows } = await this.db.query(
      'select 1 from refresh_tokens where jti = $1 and revoked_reason is null and expires_at > now()',
      [jti],
    );
    return rows.length > 0;
  }

  async revoke(jti: string, reason: RevocationReason, client: SqlClient = this.db): Promise<boolean> {
    const { rows } = await client.query(
      'update refresh_tokens set revoked_reason = $2, revoked_at = now() where jti = $1 and revoked_reason is null returning jti',
      [jti, reason],
    );
    return rows.length > 0;
  }

  async revokeAllOf(userId: string, reason: RevocationReason, client: SqlClient = this.db): Promise<number> {
    const { rows } = await client.query(
      'update refresh_tokens set revoked_reason = $2, revoked_at = now() where user_id = $1 and revoked_reason is null and expires_at > now() returning jti',
      [userId, reason],
    );
    return rows.length;
  }
}
