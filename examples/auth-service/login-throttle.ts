import type { Database, SqlClient } from '../storage';

export interface ThrottleLimits {
  /** Failed logins allowed per account from one client address within the window. */
  perAddress: number;
  /** Failed logins allowed per account from all addresses together: a distributed guess, not one noisy client. */
  perAccount: number;
  windowMs: number;
}

export const DEFAULT_LIMITS: ThrottleLimits = { perAddress: 5, perAccount: 50, windowMs: 15 * 60 * 1000 };

/** A login may go ahead, or must wait this many seconds. */
export type Admission = { admitted: true; release(succeeded: boolean): Promise<void> } | { admitted: false; retryAfter: number };

/**
 * Slows password guessing without letting a stranger lock the owner out: failures are counted per
 * (account, client address), so guesses from one address throttle that address only, and per account with a
 * much higher ceiling, so guesses spread over many addresses still end. Counters live in the database: every
 * auth-service instance counts the same.
 *
 * Each attempt is counted before the password is checked and given back when it succeeds, so concurrent
 * guesses cannot slip past the limit between check and count; a refused attempt counts nothing (a throttled
 * address cannot push the account towards its ceiling).
 */
export class LoginThrottle {
  constructor(
    private readonly db: Database,
    private readonly limits: ThrottleLimits = DEFAULT_LIMITS,
    private readonly clock: () => number = Date.now,
  ) {}

  admit(account: string, address: string): Promise<Admission> {
    const now = new Date(this.clock());
    const pairKey = `pair:${JSON.stringify([account, address])}`;
    const accountKey = `account:${account}`;
    return this.prune(now).then(() => this.db.transaction(async (tx): Promise<Admission> => {
      const pair = await this.count(tx, pairKey, this.limits.perAddress, now);
      if (!pair.admitted) return { admitted: false, retryAfter: pair.retryAfter };
      const whole = await this.count(tx, accountKey, this.limits.perAccount, now);
      if (!whole.admitted) {
        await giveBack(tx, pairKey);
        return { admitted: false, retryAfter: whole.retryAfter };
      }
      return {
        admitted: true,
        // A success clears this address's failures and gives back its attempt; a failure stays counted.
        release: async (succeeded) => {
          if (!succeeded) return;
          await this.db.query('delete from login_attempts where key = $1', [pairKey]);
          await giveBack(this.db, accountKey);
        },
      };
    }));
  }

  /** Old windows of anyone: the table holds only what can still refuse a login. Rows in use are skipped, never waited for. */
  private async prune(now: Date): Promise<void> {
    await this.db.query(
      'delete from login_attempts where key in (select key from login_attempts where window_start <= $1 for update skip locked)',
      [new Date(now.getTime() - this.limits.windowMs)],
    );
  }

  /** Counts one attempt on `key` unless its window is already full (attempts = limit + 1 marks it full). */
  private async count(tx: SqlClient, key: string, limit: number, now: Date): Promise<{ admitted: true } | { admitted: false; retryAfter: number }> {
    const windowStart = new Date(now.getTime() - this.limits.windowMs);
    const { rows } = await tx.query<{ attempts: number; window_start: Date | string }>(
      `insert into login_attempts (key, attempts, window_start) values ($1, 1, $2)
       on conflict (key) do update set
         attempts = case when login_attempts.window_start <= $4 then 1
                         when login_attempts.attempts > $3 then login_attempts.attempts
                         else login_attempts.attempts + 1 end,
         window_start = case when login_attempts.window_start <= $4 then $2 else login_attempts.window_start end
       returning attempts, window_start`,
      [key, now, limit, windowStart],
    );
    const row = rows[0]!;
    if (row.attempts <= limit) return { admitted: true };
    const endsAt = new Date(row.window_start).getTime() + this.limits.windowMs;
    return { admitted: false, retryAfter: Math.max(1, Math.ceil((endsAt - now.getTime()) / 1000)) };
  }
}

async function giveBack(client: SqlClient, key: string): Promise<void> {
  await client.query('update login_attempts set attempts = attempts - 1 where key = $1 and attempts > 0', [key]);
}
