import { isIPv4, isIPv6 } from 'node:net';
import type { Database, SqlClient } from '../storage/database';

export interface ThrottleLimits {
  /** Failed logins allowed per account from one client address (an IPv6 /64 is one address) within the window. */
  perAddress: number;
  /**
   * Failed logins of an account from all addresses within the window after which it is guarded: every address then
   * has one failed attempt at it instead of `perAddress`. Never a lockout: an address without failures still gets
   * its password checked, so the owner logs in from there.
   */
  perAccount: number;
  windowMs: number;
}

const DEFAULT_LIMITS: ThrottleLimits = { perAddress: 5, perAccount: 50, windowMs: 15 * 60 * 1000 };

/** Above any count a window can reach: the account's counter is never full, it only says when the account is guarded. */
const UNCAPPED = 2_147_483_647;

/** How an admitted attempt ended: the password was right, wrong, or never checked (the request ran out of time). */
type Outcome = 'succeeded' | 'failed' | 'unchecked';

/** A login may go ahead, or must wait this many seconds. */
export type Admission =
  | { admitted: true; release(outcome: Outcome): Promise<void> }
  | { admitted: false; retryAfter: number };

/**
 * Slows password guessing without letting a stranger lock the owner out. Failures are counted per (account, client
 * address): guesses from one address throttle that address only. Failures of an account from all addresses are
 * counted too, but only to shrink what each address may try once they pass `perAccount` (a guess spread over many
 * addresses then costs one address per guess); the right password from an address that has not failed is always
 * checked. Counters live in the database: every auth-service instance counts the same.
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
    const pairKey = `pair:${JSON.stringify([account, addressBucket(address)])}`;
    const accountKey = `account:${account}`;
    return this.prune(now).then(() =>
      this.db.transaction(async (tx): Promise<Admission> => {
        // The account's row first: it is locked until commit, so attempts on one account take turns here.
        const failures = (await this.count(tx, accountKey, UNCAPPED, now)).attempts - 1;
        const allowance = failures >= this.limits.perAccount ? 1 : this.limits.perAddress;
        const pair = await this.count(tx, pairKey, allowance, now);
        if (pair.attempts > allowance) {
          await giveBack(tx, accountKey);
          return { admitted: false, retryAfter: this.secondsLeft(pair.windowStart, now) };
        }
        return {
          admitted: true,
          // A success clears this address's failures and gives back its attempt; a failure stays counted; an attempt
          // whose password was never checked is given back.
          release: async (outcome) => {
            if (outcome === 'failed') return;
            if (outcome === 'succeeded') await this.db.query('delete from login_attempts where key = $1', [pairKey]);
            else await giveBack(this.db, pairKey);
            await giveBack(this.db, accountKey);
          },
        };
      }),
    );
  }

  /** Old windows of anyone: the table holds only what can still refuse a login. Rows in use are skipped, never waited for. */
  private async prune(now: Date): Promise<void> {
    await this.db.query(
      'delete from login_attempts where key in (select key from login_attempts where window_start <= $1 for update skip locked)',
      [new Date(now.getTime() - this.limits.windowMs)],
    );
  }

  /** Counts one attempt on `key` unless its window is already full (attempts = limit + 1 marks it full). */
  private async count(
    tx: SqlClient,
    key: string,
    limit: number,
    now: Date,
  ): Promise<{ attempts: number; windowStart: Date }> {
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
    return { attempts: Number(row.attempts), windowStart: new Date(row.window_start) };
  }

  private secondsLeft(windowStart: Date, now: Date): number {
    return Math.max(1, Math.ceil((windowStart.getTime() + this.limits.windowMs - now.getTime()) / 1000));
  }
}

async function giveBack(client: SqlClient, key: string): Promise<void> {
  await client.query('update login_attempts set attempts = attempts - 1 where key = $1 and attempts > 0', [key]);
}

/**
 * What counts as one address: an IPv4 address (also when mapped into IPv6), or an IPv6 /64 — the block one subscriber
 * usually gets, so cycling through its 2^64 addresses buys no extra guesses. Anything else as it is.
 */
export function addressBucket(address: string): string {
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  if (mapped && isIPv4(mapped[1]!)) return mapped[1]!;
  const bare = address.split('%')[0]!;
  if (!isIPv6(bare)) return address;
  const [head, tail] = bare.includes('::') ? bare.split('::') : [bare, undefined];
  const groups = (part: string | undefined): string[] =>
    part ? part.split(':').flatMap((g) => (g.includes('.') ? ['0', '0'] : [g])) : [];
  const before = groups(head);
  const after = groups(tail);
  const all =
    tail === undefined ? before : [...before, ...Array<string>(8 - before.length - after.length).fill('0'), ...after];
  return `${all
    .slice(0, 4)
    .map((g) => parseInt(g, 16).toString(16))
    .join(':')}::/64`;
}
