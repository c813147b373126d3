import { expect } from 'chai';
import bcrypt from 'bcryptjs';
import { authHandlers } from '../../examples/auth-service/handlers';
import { LoginThrottle, type ThrottleLimits } from '../../examples/auth-service/login-throttle';
import { RefreshStore } from '../../examples/auth-service/refresh-store';
import { TokenSigner } from '../../examples/auth-service/tokens';
import { ExternalVerifier } from '../../examples/auth-service/external-providers';
import { UserStore } from '../../examples/users-service/store';
import { openDatabase, type Database } from '../../examples/storage';
import { ServiceError } from '../../sdk';
import { BACKENDS } from '../support/databases';

const OWNER = { email: 'owner@example.com', password: 'the-right-password' };
const LIMITS: ThrottleLimits = { perAddress: 3, perAccount: 7, windowMs: 15 * 60 * 1000 };

/** The auth service's login handler on a real database, with a clock the test moves. */
function loginService(db: Database, clock: { now: number }) {
  const h = authHandlers({
    store: new UserStore(db),
    signer: new TokenSigner({ secret: 'a-test-secret-of-at-least-32-characters!', lifetimes: { accessSeconds: 300, refreshSeconds: 7 * 86400 } }),
    refreshTokens: new RefreshStore(db),
    throttle: new LoginThrottle(db, LIMITS, () => clock.now),
    external: new ExternalVerifier({}),
  });
  /** The outcome's code: OK, INVALID_CREDENTIALS or RATE_LIMIT_EXCEEDED (with its retryAfter). */
  return async (password: string, clientAddress?: string, email = OWNER.email): Promise<{ code: string; retryAfter?: number }> => {
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
      await new UserStore(db).insert({ email: OWNER.email, role: 'user', permissions: [], passwordHash: await bcrypt.hash(OWNER.password, 4) });
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
      for (let i = 0; i < LIMITS.perAddress; i++) expect(await login('wrong', '198.51.100.1')).to.deep.equal({ code: 'INVALID_CREDENTIALS', retryAfter: undefined });
      clock.now += 60_000;
      expect(await login(OWNER.password, '198.51.100.1')).to.deep.equal({ code: 'RATE_LIMIT_EXCEEDED', retryAfter: LIMITS.windowMs / 1000 - 60 });
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
      const { rows } = await db.query<{ attempts: number }>("select attempts from login_attempts where key like 'account:%'");
      expect(rows.map((r) => r.attempts)).to.deep.equal([LIMITS.perAddress]);
      expect(await login(OWNER.password, '203.0.113.9')).to.deep.equal({ code: 'OK' });
    });

    it('ends guesses spread over many addresses at the per-account ceiling, for every address', async () => {
      const outcomes: string[] = [];
      for (let i = 0; i < LIMITS.perAccount + 2; i++) outcomes.push((await login('wrong', `192.0.2.${i}`)).code);
      expect(outcomes.filter((c) => c === 'INVALID_CREDENTIALS')).to.have.length(LIMITS.perAccount);
      expect(outcomes.slice(LIMITS.perAccount)).to.deep.equal(['RATE_LIMIT_EXCEEDED', 'RATE_LIMIT_EXCEEDED']);
      expect((await login(OWNER.password, '203.0.113.9')).code).to.equal('RATE_LIMIT_EXCEEDED');
      expect((await login('wrong', '198.51.100.1', 'someone-else@example.com')).code).to.equal('INVALID_CREDENTIALS');
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
        for (let i = 0; i < LIMITS.perAddress; i++) expect((await (i % 2 ? login : other)('wrong', '198.51.100.1')).code).to.equal('INVALID_CREDENTIALS');
        expect((await other(OWNER.password, '198.51.100.1')).code).to.equal('RATE_LIMIT_EXCEEDED');
      } finally {
        if (otherDb !== db) await otherDb.close();
      }
    });
  });
}
