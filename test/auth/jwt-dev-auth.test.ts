import './support';
import { expect } from 'chai';
import nock from 'nock';
import express from 'express';
import type { AddressInfo } from 'node:net';
import { jwtDevAuthPolicy, type JwtDevAuthAction } from '../../policies/jwt-dev-auth';
import { TokenVerifier } from '../../plugin/auth/verify-token';
import { resolveAuthConfig } from '../../plugin/settings/auth';
import { GatewayError } from '../../plugin/errors/gateway-error';
import { quiet, testRuntime } from '../support/runtime';
import type { Runtime } from '../../plugin/runtime';
import { requestContext } from '../../plugin/request/context';
import {
  AUDIENCE,
  ISSUER,
  JWKS_HOST,
  JWKS_PATH,
  JWKS_URI,
  SECRET,
  claims,
  envWithoutAuth,
  fakeReq,
  hs256,
  isolateAuthEnv,
  useNock,
  now,
  rs256,
  rsaKey,
  rsClaims,
  run,
  verifierFor,
} from './support';

/** The policies' runtime (verifiers, log); its bus is never started: these routes name no contract. */
const runtime = testRuntime({}, quiet, envWithoutAuth());
after(() => runtime.close());

const k1 = rsaKey('k1');
const k2 = rsaKey('k2');
const HS: JwtDevAuthAction = { jwtSecret: SECRET };
const RS: JwtDevAuthAction = { jwksUri: JWKS_URI, issuer: ISSUER, audience: AUDIENCE };
const BOTH: JwtDevAuthAction = { ...HS, ...RS };

/** Serves a key set whose keys the test can change (null: the host answers 503); counts the fetches. */
function keySetHost(keys: () => object[] | null): { fetches: () => number } {
  let n = 0;
  nock(JWKS_HOST)
    .persist()
    .get(JWKS_PATH)
    .reply(() => {
      n++;
      const current = keys();
      return current === null ? [503, 'down'] : [200, { keys: current }];
    });
  return { fetches: () => n };
}

async function authorize(action: JwtDevAuthAction, headers: Record<string, string | undefined>, on: Runtime = runtime) {
  const req = fakeReq(headers);
  const out = await run(jwtDevAuthPolicy(on.services).policy(action), req);
  return { ...out, user: requestContext(req).caller };
}

/**
 * The authentication settings are the runtime's, read from the environment with the others when it is made: a
 * runtime made after the test set its variables, closed after `use`.
 */
async function withRuntimeOfEnv<T>(use: (runtimeOfEnv: Runtime) => Promise<T>): Promise<T> {
  const made = testRuntime();
  try {
    return await use(made);
  } finally {
    await made.close();
  }
}

/**
 * The verifier the policy would use for `action`, on a clock the test moves: cooldowns, refreshes and exp are
 * checked to the millisecond without sleeping. `authorize` gives what the policy would do with the token.
 */
function onClock(action: JwtDevAuthAction) {
  let ms = Date.now();
  const verifier = new TokenVerifier(resolveAuthConfig(action), { now: () => ms });
  return {
    verifier,
    seconds: () => Math.floor(ms / 1000),
    advance: (by: number) => void (ms += by),
    at: (when: number) => void (ms = when),
    async authorize(token: string): Promise<{ next: boolean; code?: string }> {
      try {
        await verifier.authenticate(`Bearer ${token}`);
        return { next: true };
      } catch (err) {
        if (err instanceof GatewayError) return { next: false, code: err.code };
        throw err;
      }
    },
  };
}

describe('jwt-dev-auth: accepted tokens', () => {
  isolateAuthEnv();
  useNock();
  beforeEach(() => {
    runtime.services.verifiers.clear();
    nock.cleanAll();
    nock.disableNetConnect();
  });
  afterEach(() => {
    nock.cleanAll();
    nock.enableNetConnect();
  });

  it('HS256: sets the AuthenticatedUser with its defaults', async () => {
    const out = await authorize(HS, { authorization: `Bearer ${hs256(claims())}` });
    expect(out.next).to.equal(true);
    expect(out.user).to.deep.equal({ userId: 'user-1', email: 'user-1@unknown', name: 'user-1', permissions: [] });
  });

  it('HS256: takes email, name, permissions and roles from the claims', async () => {
    const token = hs256(
      claims({ email: 'ann@example.com', name: 'Ann', permissions: ['users:read', 'users:create'], roles: ['admin'] }),
    );
    const out = await authorize(HS, { authorization: `Bearer ${token}` });
    expect(out.user).to.deep.equal({
      userId: 'user-1',
      email: 'ann@example.com',
      name: 'Ann',
      permissions: ['users:read', 'users:create'],
      roles: ['admin'],
    });
  });

  it('strips the Bearer scheme in any case, and takes a bare token', async () => {
    const token = hs256(claims());
    for (const header of [`bearer ${token}`, `BEARER ${token}`, `Bearer   ${token}  `, token]) {
      const out = await authorize(HS, { authorization: header });
      expect(out.next, header.slice(0, 10)).to.equal(true);
    }
  });

  it('RS256 via the key set, picked by kid, with issuer and audience', async () => {
    const host = keySetHost(() => [k1.jwk, k2.jwk]);
    const out = await authorize(RS, { authorization: `Bearer ${rs256(k2, rsClaims({ permissions: ['x:y'] }))}` });
    expect(out.next).to.equal(true);
    expect(out.user?.permissions).to.deep.equal(['x:y']);
    expect(host.fetches()).to.equal(1);
  });

  it('RS256: an aud array that includes ours is accepted', async () => {
    keySetHost(() => [k1.jwk]);
    const out = await authorize(RS, { authorization: `Bearer ${rs256(k1, rsClaims({ aud: ['other', AUDIENCE] }))}` });
    expect(out.next).to.equal(true);
  });

  it('RS256 without issuer/audience configured does not require them', async () => {
    keySetHost(() => [k1.jwk]);
    const out = await authorize({ jwksUri: JWKS_URI }, { authorization: `Bearer ${rs256(k1, claims())}` });
    expect(out.next).to.equal(true);
  });

  it('both modes at once: HS256 and RS256 tokens are both accepted', async () => {
    keySetHost(() => [k1.jwk]);
    expect((await authorize(BOTH, { authorization: `Bearer ${hs256(claims())}` })).next).to.equal(true);
    expect((await authorize(BOTH, { authorization: `Bearer ${rs256(k1, rsClaims())}` })).next).to.equal(true);
  });

  it('reads the configuration from the environment (JWT_SECRET, JWKS_URI, JWT_ISSUER, JWT_AUDIENCE)', async () => {
    keySetHost(() => [k1.jwk]);
    Object.assign(process.env, { JWT_SECRET: SECRET, JWKS_URI, JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE });
    await withRuntimeOfEnv(async (fromEnv) => {
      expect((await authorize({}, { authorization: `Bearer ${hs256(claims())}` }, fromEnv)).next).to.equal(true);
      expect((await authorize({}, { authorization: `Bearer ${rs256(k1, rsClaims())}` }, fromEnv)).next).to.equal(true);
      expect(
        (await authorize({}, { authorization: `Bearer ${rs256(k1, rsClaims({ iss: 'https://other/' }))}` }, fromEnv))
          .status,
      ).to.equal(401);
    });
    // The runtime made before the variables were set does not see them.
    expect((await authorize({}, { authorization: `Bearer ${hs256(claims())}` })).status).to.equal(401);
  });

  it('action parameters override the environment', async () => {
    process.env.JWT_SECRET = 'x'.repeat(40);
    await withRuntimeOfEnv(async (fromEnv) => {
      expect((await authorize({}, { authorization: `Bearer ${hs256(claims())}` }, fromEnv)).status).to.equal(401);
      expect((await authorize(HS, { authorization: `Bearer ${hs256(claims())}` }, fromEnv)).next).to.equal(true);
    });
  });

  it('clock tolerance (JWT_CLOCK_TOLERANCE) admits a token just expired or not yet valid', async () => {
    const expired = hs256(claims({ exp: now() - 10 }));
    const early = hs256(claims({ nbf: now() + 10 }));
    expect((await authorize(HS, { authorization: `Bearer ${expired}` })).body?.code).to.equal('TOKEN_EXPIRED');
    expect((await authorize({ ...HS, clockTolerance: 30 }, { authorization: `Bearer ${expired}` })).next).to.equal(
      true,
    );
    expect((await authorize({ ...HS, clockTolerance: 30 }, { authorization: `Bearer ${early}` })).next).to.equal(true);
    process.env.JWT_CLOCK_TOLERANCE = '30';
    await withRuntimeOfEnv(async (fromEnv) =>
      expect((await authorize(HS, { authorization: `Bearer ${expired}` }, fromEnv)).next).to.equal(true),
    );
  });

  describe('key set', () => {
    it('picks up a key rotation (new kid) without a restart, once the cooldown allows', async () => {
      let keys = [k1.jwk];
      const host = keySetHost(() => keys);
      const clock = onClock({ ...RS, jwksCooldownMs: 150 });
      expect((await clock.authorize(rs256(k1, rsClaims()))).next).to.equal(true);
      keys = [k1.jwk, k2.jwk];
      const rotated = rs256(k2, rsClaims());
      // Inside the cooldown the new kid is unknown (no fetch), to its last millisecond…
      expect((await clock.authorize(rotated)).code).to.equal('INVALID_TOKEN');
      clock.advance(149);
      expect((await clock.authorize(rotated)).code).to.equal('INVALID_TOKEN');
      expect(host.fetches()).to.equal(1);
      clock.advance(1);
      // …after it, the unknown kid makes one fetch and the rotated key is found.
      expect((await clock.authorize(rotated)).next).to.equal(true);
      expect(host.fetches()).to.equal(2);
      expect((await clock.authorize(rs256(k2, rsClaims({ sub: 'u2' })))).next).to.equal(true);
      expect(host.fetches()).to.equal(2);
    });

    it('unknown kids cannot make it fetch the key set more than once per cooldown', async () => {
      const host = keySetHost(() => [k1.jwk]);
      const results = await Promise.all(
        Array.from({ length: 25 }, (_, i) =>
          authorize(RS, { authorization: `Bearer ${rs256(k1, rsClaims(), { kid: `random-${i}` })}` }),
        ),
      );
      for (const r of results) expect(r.body?.code).to.equal('INVALID_TOKEN');
      for (let i = 0; i < 25; i++)
        await authorize(RS, { authorization: `Bearer ${rs256(k1, rsClaims(), { kid: `later-${i}` })}` });
      expect(host.fetches()).to.equal(1);
      expect((await authorize(RS, { authorization: `Bearer ${rs256(k1, rsClaims())}` })).next).to.equal(true);
      expect(host.fetches()).to.equal(1);
    });

    it('a key set that is down answers 503 with Retry-After, and is not fetched again before the backoff', async () => {
      let n = 0;
      nock(JWKS_HOST)
        .persist()
        .on('request', () => n++)
        .get(JWKS_PATH)
        .replyWithError('ECONNREFUSED');
      const action = { ...RS, jwksFailureBackoffMs: 3000 };
      for (let i = 0; i < 5; i++) {
        const out = await authorize(action, { authorization: `Bearer ${rs256(k1, rsClaims())}` });
        expect(out.status).to.equal(503);
        expect(out.body.code).to.equal('SERVICE_UNAVAILABLE');
        expect(Number(out.headers['retry-after'])).to.be.within(1, 3);
      }
      expect(n).to.equal(1);
    });

    it('keeps the keys it has while a refresh of a stale set fails', async () => {
      let up = true;
      const host = keySetHost(() => (up ? [k1.jwk] : null));
      const clock = onClock({ ...RS, jwksMaxAgeMs: 50, jwksCooldownMs: 0, jwksFailureBackoffMs: 0, tokenCacheMax: 0 });
      expect((await clock.authorize(rs256(k1, rsClaims()))).next).to.equal(true);
      up = false;
      clock.advance(50);
      expect((await clock.authorize(rs256(k1, rsClaims()))).next).to.equal(true);
      expect(host.fetches()).to.equal(2);
    });

    it('a token naming a host in jku or x5u never makes the gateway call it, even when signed by a configured key', async () => {
      keySetHost(() => [k1.jwk]);
      const evil = nock('https://evil.test').persist().get(/.*/).reply(200, {});
      const token = rs256(k1, rsClaims(), { jku: 'https://evil.test/jwks', x5u: 'https://evil.test/cert' });
      expect((await authorize(RS, { authorization: `Bearer ${token}` })).next).to.equal(true);
      expect(evil.isDone()).to.equal(false);
    });
  });

  describe('verified-token cache', () => {
    it('a second request with the same token is not verified again', async () => {
      const token = `Bearer ${hs256(claims({ permissions: ['a:b'] }))}`;
      const first = await authorize(HS, { authorization: token });
      // A later step cannot change the user the cache shares between the token's requests.
      expect(() => first.user!.permissions.push('admin:all')).to.throw(TypeError);
      const second = await authorize(HS, { authorization: token });
      expect(second.user?.permissions).to.deep.equal(['a:b']);
      const stats = verifierFor(runtime, HS).stats;
      expect(stats).to.deep.equal({ verifications: 1, cacheHits: 1 });
    });

    it('is shared by every policy instance with the same configuration (one per pipeline)', async () => {
      const token = `Bearer ${hs256(claims())}`;
      await authorize(HS, { authorization: token });
      await authorize({ ...HS, public: false }, { authorization: token });
      expect(verifierFor(runtime, HS).stats.verifications).to.equal(1);
    });

    it('can be turned off', async () => {
      const action = { ...HS, tokenCacheMax: 0 };
      const token = `Bearer ${hs256(claims())}`;
      await authorize(action, { authorization: token });
      await authorize(action, { authorization: token });
      expect(verifierFor(runtime, action).stats).to.deep.equal({ verifications: 2, cacheHits: 0 });
    });

    it('never serves a token past its exp', async () => {
      const clock = onClock(HS);
      const exp = clock.seconds() + 60;
      const token = hs256(claims({ exp }));
      expect((await clock.authorize(token)).next).to.equal(true);
      clock.at(exp * 1000 - 1);
      expect((await clock.authorize(token)).next, 'a millisecond before exp').to.equal(true);
      expect(clock.verifier.stats, 'answered from the cache').to.deep.equal({ verifications: 1, cacheHits: 1 });
      clock.at(exp * 1000);
      expect((await clock.authorize(token)).code).to.equal('TOKEN_EXPIRED');
      expect(clock.verifier.stats, 'verified again, not served from the cache').to.deep.equal({
        verifications: 2,
        cacheHits: 1,
      });
    });
  });
});

describe('jwt-dev-auth: development mode', () => {
  isolateAuthEnv();
  beforeEach(() => runtime.services.verifiers.clear());

  const dev = { 'x-dev-user-id': 'dev-7', 'x-dev-permissions': ' users:read, ,users:create ,, ' };

  it('builds the user from X-Dev-User-Id and X-Dev-Permissions (trimmed, empties dropped)', async () => {
    const out = await authorize({ developmentAuthEnabled: true }, dev);
    expect(out.next).to.equal(true);
    expect(out.user).to.deep.equal({
      userId: 'dev-7',
      email: 'dev-7@development.local',
      name: 'Development User dev-7',
      permissions: ['users:read', 'users:create'],
    });
  });

  it('no X-Dev-Permissions: an empty list', async () => {
    const out = await authorize({ developmentAuthEnabled: true }, { 'x-dev-user-id': 'dev-7' });
    expect(out.user?.permissions).to.deep.equal([]);
  });

  it('is on when DEVELOPMENT_AUTH_ENABLED is exactly "true", read when the runtime is made', async () => {
    process.env.DEVELOPMENT_AUTH_ENABLED = 'true';
    await withRuntimeOfEnv(async (fromEnv) => {
      delete process.env.DEVELOPMENT_AUTH_ENABLED;
      const req = fakeReq(dev);
      expect((await run(jwtDevAuthPolicy(fromEnv.services).policy({}), req)).next).to.equal(true);
      expect(requestContext(req).caller?.userId).to.equal('dev-7');
    });
  });

  for (const value of ['TRUE', 'True', '1', 'yes', 'on', ' true', 'true ', '']) {
    it(`is off when DEVELOPMENT_AUTH_ENABLED=${JSON.stringify(value)}: dev headers are ignored`, async () => {
      process.env.DEVELOPMENT_AUTH_ENABLED = value;
      const out = await withRuntimeOfEnv((fromEnv) => authorize({}, dev, fromEnv));
      expect(out.status).to.equal(401);
      expect(out.body.code).to.equal('NO_AUTH_HEADER');
    });
  }

  it('off: a Bearer token works and dev headers beside it are ignored', async () => {
    const out = await authorize(HS, { ...dev, authorization: `Bearer ${hs256(claims())}` });
    expect(out.user?.userId).to.equal('user-1');
  });

  it('on without X-Dev-User-Id: falls back to the Bearer token, 401 NO_AUTH_HEADER without one', async () => {
    const action = { ...HS, developmentAuthEnabled: true };
    expect((await authorize(action, { 'x-dev-permissions': 'a:b' })).body.code).to.equal('NO_AUTH_HEADER');
    expect((await authorize(action, { 'x-dev-user-id': '   ' })).body.code).to.equal('NO_AUTH_HEADER');
    const out = await authorize(action, { authorization: `Bearer ${hs256(claims())}` });
    expect(out.user?.userId).to.equal('user-1');
  });

  it('on with X-Dev-User-Id: no token is validated', async () => {
    const out = await authorize(
      { ...HS, developmentAuthEnabled: true },
      { ...dev, authorization: 'Bearer not-a-token' },
    );
    expect(out.next).to.equal(true);
    expect(out.user?.userId).to.equal('dev-7');
  });

  it('header names match in any case (through a real HTTP server)', async () => {
    const app = express();
    app.get('/who', jwtDevAuthPolicy(runtime.services).policy({ developmentAuthEnabled: true }), (req, res) => {
      res.json(requestContext(req).caller);
    });
    const server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    try {
      const { port } = server.address() as AddressInfo;
      const res = await fetch(`http://127.0.0.1:${port}/who`, {
        headers: { 'X-DEV-USER-ID': 'Ann', 'x-Dev-Permissions': 'a:b,c:d' },
      });
      expect(res.status).to.equal(200);
      expect(await res.json()).to.deep.equal({
        userId: 'Ann',
        email: 'Ann@development.local',
        name: 'Development User Ann',
        permissions: ['a:b', 'c:d'],
      });
    } finally {
      server.close();
    }
  });
});
