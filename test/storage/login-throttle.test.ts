import { expect } from 'chai';
import bcrypt from 'bcryptjs';
import { authHandlers } from '../../examples/auth-service/handlers';
import { LoginThrottle, addressBucket, type ThrottleLimits } from '../../examples/auth-service/login-throttle';
import { RefreshStore } from '../../examples/auth-service/refresh-store';
import { TokenSigner } from '../../examples/auth-service/tokens';
import { ExternalVerifier } from '../../examples/auth-service/external-providers';
import { UserStore } from '../../examples/users-service/store';
import { openDatabase } from '../../examples/storage';
import type { Database } from '../../examples/storage/database';
import { ServiceError } from '../../sdk';
import { BACKENDS } from '../support/databases';

const OWNER = { email: 'owner@example.com', password: 'the-right-password' };
const LIMITS: ThrottleLimits = { perAddress: 3, perAccount: 7, windowMs: 15 * 60 * 1000 };

/** The auth service's login handler on a real database, with a clock the test moves. */
function loginService(db: Database, clock: { now: number }) {
  const h = authHandlers({
    store: new UserStore(db),
    signer: new TokenSigner({
      secret: 'a-test-secret-of-at-least-32-characters!',
      lifetimes: { accessSeconds: 300, refreshSeconds: 7 * 86400 },
    }),
    refreshTokens: new RefreshStore(db),
    throttle: new LoginThrottle(db, LIMITS, () => clock.now),
    external: new ExternalVerifier({}),
  });
  /** The outcome's code: OK, INVALID_CREDENTIALS or RATE_LIMIT_EXCEEDED (with its retryAfter). */
  return async (
    password: string,
    clientAddress?: string,
    email = OWNER.email,
  ): Promise<{ code: string; retryAfter?: number }> => {
    try {
      await h.authenticate({ email, password }, { correlationId: 'c', requestId: 'r', clientAddress });
      return { code: 'OK' };
    } catch (err) {
      if (!(err instanceof ServiceError)) throw err;
      return { code: err.code, retryAfter: err.fields.retryAfter as number | undefined };
    }
  };
}

for (const backend of BACKENDS) {
  describe(`login throttling on ${backend.name}`, function () {
    this.timeout(60000);
    let fresh: Awaited<ReturnType<typeof backend.fresh>>;
    let db: Database;
    const clock = { now: Date.parse('2030-01-01T00:00:00Z') };
    let login: ReturnType<typeof loginService>;

    before(async () => {
      fresh = await backend.fresh();
      db = await openDatabase(fresh.settings);
      await new UserStore(db).insert({
        email: OWNER.email,
        role: 'user',
        permissions: [],
        passwordHash: await bcrypt.hash(OWNER.password, 4),
      });
      login = loginService(db, clock);
    });
    beforeEach(async () => {
      await db.query('delete from login_attempts');
      clock.now += 24 * 3600 * 1000;
    });
    after(async () => {
      await db?.close();
      await fresh?.cleanup();
    });

    it('throttles the address that guessed, with retryAfter until its window ends', async () => {
      for (let i = 0; i < LIMITS.perAddress; i++)
        expect(await login('wrong', '198.51.100.1')).to.deep.equal({
          code: 'INVALID_CREDENTIALS',
          retryAfter: undefined,
        });
      clock.now += 60_000;
      expect(await login(OWNER.password, '198.51.100.1')).to.deep.equal({
        code: 'RATE_LIMIT_EXCEEDED',
        retryAfter: LIMITS.windowMs / 1000 - 60,
      });
      clock.now += LIMITS.windowMs;
      expect(await login(OWNER.password, '198.51.100.1')).to.deep.equal({ code: 'OK' });
    });

    it('lets the owner in from another address while one address is throttled', async () => {
      for (let i = 0; i < LIMITS.perAddress + 2; i++) await login('wrong', '198.51.100.1');
      expect((await login(OWNER.password, '198.51.100.1')).code).to.equal('RATE_LIMIT_EXCEEDED');
      expect(await login(OWNER.password, '203.0.113.9')).to.deep.equal({ code: 'OK' });
    });

    it('does not count refused attempts: a throttled address cannot push the account to its ceiling', async () => {
      for (let i = 0; i < LIMITS.perAccount * 3; i++) await login('wrong', '198.51.100.1');
      const { rows } = await db.query<{ attempts: number }>(
        "select attempts from login_attempts where key like 'account:%'",
      );
      expect(rows.map((r) => r.attempts)).to.deep.equal([LIMITS.perAddress]);
      expect(await login(OWNER.password, '203.0.113.9')).to.deep.equal({ code: 'OK' });
    });

    it('lets the right password in from a fresh address after wrong guesses from 12 addresses, each throttled', async () => {
      // The attack of issue 28: every address guesses until it is refused.
      const outcomes: string[] = [];
      for (let a = 0; a < 12; a++) {
        for (let i = 0; i < LIMITS.perAddress + 2; i++) outcomes.push((await login('wrong', `192.0.2.${a}`)).code);
      }
      // perAccount failures, then one per address that had not failed when the account became guarded.
      const guessed = outcomes.filter((c) => c === 'INVALID_CREDENTIALS').length;
      const fullAddresses = Math.floor(LIMITS.perAccount / LIMITS.perAddress);
      expect(guessed).to.equal(LIMITS.perAccount + (12 - fullAddresses - 1));
      for (let a = 0; a < 12; a++)
        expect((await login(OWNER.password, `192.0.2.${a}`)).code, `192.0.2.${a}`).to.equal('RATE_LIMIT_EXCEEDED');
      expect(await login(OWNER.password, '203.0.113.9')).to.deep.equal({ code: 'OK' });
      // Still guarded after the owner's success: a fresh address has one guess, then waits.
      expect((await login('wrong', '203.0.113.10')).code).to.equal('INVALID_CREDENTIALS');
      expect((await login('wrong', '203.0.113.10')).code).to.equal('RATE_LIMIT_EXCEEDED');
    });

    it('past the per-account ceiling gives every address one failure, and the owner still gets in', async () => {
      for (let i = 0; i < LIMITS.perAccount; i++)
        expect((await login('wrong', `192.0.2.${i}`)).code).to.equal('INVALID_CREDENTIALS');
      // An address that failed once before is refused at once, with the rest of its window.
      clock.now += 60_000;
      expect(await login('wrong', '192.0.2.0')).to.deep.equal({
        code: 'RATE_LIMIT_EXCEEDED',
        retryAfter: LIMITS.windowMs / 1000 - 60,
      });
      expect((await login(OWNER.password, '192.0.2.1')).code).to.equal('RATE_LIMIT_EXCEEDED');
      // A fresh address: one wrong guess is checked, the next waits; the right password from another fresh one passes.
      expect((await login('wrong', '198.51.100.1')).code).to.equal('INVALID_CREDENTIALS');
      expect((await login('wrong', '198.51.100.1')).code).to.equal('RATE_LIMIT_EXCEEDED');
      expect(await login(OWNER.password, '198.51.100.2')).to.deep.equal({ code: 'OK' });
      // Below the ceiling again once the window is over: the full allowance per address.
      clock.now += LIMITS.windowMs;
      for (let i = 0; i < LIMITS.perAddress; i++)
        expect((await login('wrong', '192.0.2.0')).code).to.equal('INVALID_CREDENTIALS');
      expect((await login('wrong', '192.0.2.0')).code).to.equal('RATE_LIMIT_EXCEEDED');
    });

    it('counts an IPv6 /64 as one address, and an IPv4-mapped address as its IPv4 address', async () => {
      for (let i = 0; i < LIMITS.perAddress; i++)
        expect((await login('wrong', `2001:db8:1:2::${i + 1}`)).code).to.equal('INVALID_CREDENTIALS');
      expect((await login(OWNER.password, '2001:db8:1:2:ffff::9')).code).to.equal('RATE_LIMIT_EXCEEDED');
      expect(await login(OWNER.password, '2001:db8:1:3::1')).to.deep.equal({ code: 'OK' });
      for (let i = 0; i < LIMITS.perAddress; i++) await login('wrong', '198.51.100.4');
      expect((await login(OWNER.password, '::ffff:198.51.100.4')).code).to.equal('RATE_LIMIT_EXCEEDED');
    });

    it('throttles one account only: another account from the same addresses is not guarded', async () => {
      for (let i = 0; i < LIMITS.perAccount; i++) await login('wrong', `192.0.2.${i}`);
      for (let i = 0; i < LIMITS.perAddress; i++)
        expect((await login('wrong', '192.0.2.0', 'someone-else@example.com')).code).to.equal('INVALID_CREDENTIALS');
    });

    it('admits no more guesses than the limit when they arrive at once', async () => {
      const outcomes = await Promise.all(Array.from({ length: 12 }, () => login('wrong', '198.51.100.7')));
      expect(outcomes.filter((o) => o.code === 'INVALID_CREDENTIALS')).to.have.length(LIMITS.perAddress);
      expect(outcomes.filter((o) => o.code === 'RATE_LIMIT_EXCEEDED')).to.have.length(12 - LIMITS.perAddress);
    });

    it('clears the address after a correct password, and counts in the database every instance shares', async () => {
      // Another instance: its own connection pool on a server, the process's one database when embedded.
      const otherDb = fresh.settings.databaseUrl ? await openDatabase(fresh.settings) : db;
      try {
        const other = loginService(otherDb, clock);
        await login('wrong', '198.51.100.1');
        await other('wrong', '198.51.100.1');
        expect((await login(OWNER.password, '198.51.100.1')).code).to.equal('OK');
        // The success cleared the address: the full allowance is there again, counted across both instances.
        for (let i = 0; i < LIMITS.perAddress; i++)
          expect((await (i % 2 ? login : other)('wrong', '198.51.100.1')).code).to.equal('INVALID_CREDENTIALS');
        expect((await other(OWNER.password, '198.51.100.1')).code).to.equal('RATE_LIMIT_EXCEEDED');
      } finally {
        if (otherDb !== db) await otherDb.close();
      }
    });
  });
}

describe('the address a login failure is counted against', () => {
  it('is an IPv4 address as it is, also when mapped into IPv6', () => {
    expect(addressBucket('203.0.113.7')).to.equal('203.0.113.7');
    expect(addressBucket('::ffff:203.0.113.7')).to.equal('203.0.113.7');
  });
  it('is the /64 of an IPv6 address, however it is written', () => {
    expect(addressBucket('2001:db8::7')).to.equal('2001:db8:0:0::/64');
    expect(addressBucket('2001:0db8:0000:0000:1:2:3:4')).to.equal('2001:db8:0:0::/64');
    expect(addressBucket('2001:db8:1:2:3:4:5:6')).to.equal('2001:db8:1:2::/64');
    expect(addressBucket('fe80::1%eth0')).to.equal('fe80:0:0:0::/64');
    expect(addressBucket('::1')).to.equal('0:0:0:0::/64');
    expect(addressBucket('64:ff9b::192.0.2.1')).to.equal('64:ff9b:0:0::/64');
  });
  it('is anything else as it is', () => {
    expect(addressBucket('unknown')).to.equal('unknown');
  });
});
