import './support';
import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import nock from 'nock';
import { jwtDevAuthPolicy } from '../../policies/jwt-dev-auth';
import { quiet, testRuntime } from '../support/runtime';
import type { JwtDevAuthAction } from '../../policies/jwt-dev-auth';
import { requestContext } from '../../plugin/request/context';
import {
  AUDIENCE,
  ISSUER,
  JWKS_HOST,
  JWKS_PATH,
  JWKS_URI,
  SECRET,
  b64u,
  claims,
  ecJwk,
  envWithoutAuth,
  fakeReq,
  hs256,
  isolateAuthEnv,
  useNock,
  now,
  raw,
  rs256,
  rsaKey,
  rsClaims,
  run,
  verifierFor,
} from './support';

/** The policies' runtime (verifiers, log); its bus is never started: these routes name no contract. */
const runtime = testRuntime({}, quiet, envWithoutAuth());
after(() => runtime.close());

const good = rsaKey('k1');
const attacker = rsaKey('evil');
const small = rsaKey('small', 1024);
const KEYS = [good.jwk, { ...ecJwk('ec1') }, small.jwk, { kty: 'RSA', kid: 'broken', n: 'AAAA', e: '!!' }];

type JwksBehaviour = 'ok' | 'down' | 'not-json' | 'status-500' | 'not-a-set' | 'slow' | 'redirect';

interface Case {
  name: string;
  mode: 'hs' | 'rs' | 'both';
  jwks?: JwksBehaviour;
  action?: JwtDevAuthAction;
  /** The Authorization header (undefined: none). */
  authorization: () => string | string[] | undefined;
  status: number;
  code: string;
  /** Most key-set fetches allowed (default: no limit checked). */
  maxFetches?: number;
  /** Full verifications expected (e.g. 0: refused on shape alone). */
  verifications?: number;
}

const bearer = (t: string) => `Bearer ${t}`;
const tamper = (t: string) => {
  const [h, , s] = t.split('.');
  return `${h}.${b64u(JSON.stringify(claims({ sub: 'admin', permissions: ['admin:all'] })))}.${s}`;
};

const CASES: Case[] = [
  {
    name: 'no Authorization header',
    mode: 'both',
    authorization: () => undefined,
    status: 401,
    code: 'NO_AUTH_HEADER',
  },
  { name: 'empty Authorization header', mode: 'both', authorization: () => '', status: 401, code: 'NO_AUTH_HEADER' },
  {
    name: '"Bearer" with no token',
    mode: 'both',
    authorization: () => 'Bearer',
    status: 401,
    code: 'INVALID_TOKEN',
    verifications: 0,
  },
  {
    name: '"Bearer " with spaces only',
    mode: 'both',
    authorization: () => 'Bearer    ',
    status: 401,
    code: 'INVALID_TOKEN',
    verifications: 0,
  },
  {
    name: 'Basic scheme',
    mode: 'both',
    authorization: () => `Basic ${b64u('user:pass')}`,
    status: 401,
    code: 'INVALID_TOKEN',
    verifications: 0,
  },
  {
    name: 'two Authorization headers',
    mode: 'hs',
    authorization: () => [bearer(hs256(claims())), bearer(hs256(claims()))],
    status: 401,
    code: 'INVALID_TOKEN',
  },
  {
    name: 'alg none, empty signature',
    mode: 'both',
    authorization: () => bearer(raw({ alg: 'none' }, claims(), '')),
    status: 401,
    code: 'INVALID_TOKEN',
    verifications: 0,
  },
  {
    name: 'alg none with a signature',
    mode: 'both',
    authorization: () => bearer(raw({ alg: 'none' }, claims())),
    status: 401,
    code: 'INVALID_TOKEN',
    verifications: 0,
    maxFetches: 0,
  },
  {
    name: 'alg None',
    mode: 'both',
    authorization: () => bearer(raw({ alg: 'None' }, claims())),
    status: 401,
    code: 'INVALID_TOKEN',
    verifications: 0,
    maxFetches: 0,
  },
  {
    name: 'alg NONE',
    mode: 'both',
    authorization: () => bearer(raw({ alg: 'NONE' }, claims())),
    status: 401,
    code: 'INVALID_TOKEN',
    verifications: 0,
    maxFetches: 0,
  },
  {
    name: 'alg hs256 (wrong case)',
    mode: 'hs',
    authorization: () => bearer(hs256(claims(), { header: { alg: 'hs256' } })),
    status: 401,
    code: 'INVALID_TOKEN',
    verifications: 0,
  },
  {
    name: 'alg HS384',
    mode: 'both',
    authorization: () => bearer(raw({ alg: 'HS384', kid: 'k1' }, claims())),
    status: 401,
    code: 'INVALID_TOKEN',
    verifications: 0,
    maxFetches: 0,
  },
  {
    name: 'alg RS512',
    mode: 'rs',
    authorization: () => bearer(raw({ alg: 'RS512', kid: 'k1' }, claims())),
    status: 401,
    code: 'INVALID_TOKEN',
    verifications: 0,
    maxFetches: 0,
  },
  {
    name: 'alg ES256',
    mode: 'rs',
    authorization: () => bearer(raw({ alg: 'ES256', kid: 'ec1' }, claims())),
    status: 401,
    code: 'INVALID_TOKEN',
    verifications: 0,
    maxFetches: 0,
  },
  {
    name: 'alg PS256',
    mode: 'rs',
    authorization: () => bearer(raw({ alg: 'PS256', kid: 'k1' }, claims())),
    status: 401,
    code: 'INVALID_TOKEN',
    verifications: 0,
    maxFetches: 0,
  },
  {
    name: 'alg missing',
    mode: 'both',
    authorization: () => bearer(raw({ typ: 'JWT', kid: 'k1' }, claims())),
    status: 401,
    code: 'INVALID_TOKEN',
    verifications: 0,
    maxFetches: 0,
  },
  {
    name: 'alg confusion: HS256 signed with the RSA public key PEM (both modes)',
    mode: 'both',
    authorization: () => bearer(hs256(claims(), { secret: good.pem, header: { kid: 'k1' } })),
    status: 401,
    code: 'INVALID_TOKEN',
    maxFetches: 0,
  },
  {
    name: 'alg confusion: HS256 signed with the RSA public key PEM (RS256 only)',
    mode: 'rs',
    authorization: () => bearer(hs256(claims(), { secret: good.pem, header: { kid: 'k1' } })),
    status: 401,
    code: 'INVALID_TOKEN',
    maxFetches: 0,
  },
  {
    name: 'HS256 when only RS256 is configured',
    mode: 'rs',
    authorization: () => bearer(hs256(claims())),
    status: 401,
    code: 'INVALID_TOKEN',
    maxFetches: 0,
  },
  {
    name: 'RS256 when only HS256 is configured',
    mode: 'hs',
    authorization: () => bearer(rs256(good, rsClaims())),
    status: 401,
    code: 'INVALID_TOKEN',
  },
  {
    name: 'HS256 with a wrong secret',
    mode: 'hs',
    authorization: () => bearer(hs256(claims(), { secret: 'another-secret-that-is-long-enough-012345' })),
    status: 401,
    code: 'INVALID_TOKEN',
  },
  {
    name: 'tampered payload (HS256)',
    mode: 'hs',
    authorization: () => bearer(tamper(hs256(claims()))),
    status: 401,
    code: 'INVALID_TOKEN',
  },
  {
    name: 'tampered payload (RS256)',
    mode: 'rs',
    authorization: () => bearer(tamper(rs256(good, rsClaims()))),
    status: 401,
    code: 'INVALID_TOKEN',
  },
  {
    name: 'truncated signature',
    mode: 'rs',
    authorization: () => bearer(rs256(good, rsClaims()).slice(0, -10)),
    status: 401,
    code: 'INVALID_TOKEN',
  },
  {
    name: 'empty signature',
    mode: 'hs',
    authorization: () => bearer(hs256(claims()).replace(/\.[^.]+$/, '.')),
    status: 401,
    code: 'INVALID_TOKEN',
    verifications: 0,
  },
  {
    name: 'signature of another token',
    mode: 'hs',
    authorization: () => {
      const a = hs256(claims()).split('.');
      const b = hs256(claims({ sub: 'x' })).split('.');
      return bearer(`${a[0]}.${a[1]}.${b[2]}`);
    },
    status: 401,
    code: 'INVALID_TOKEN',
  },
  {
    name: 'crit header with an unknown extension',
    mode: 'hs',
    authorization: () => bearer(hs256(claims(), { header: { crit: ['exp-ext'], 'exp-ext': true } })),
    status: 401,
    code: 'INVALID_TOKEN',
    verifications: 0,
  },
  {
    name: 'b64=false header',
    mode: 'hs',
    authorization: () => bearer(hs256(claims(), { header: { b64: false, crit: ['b64'] } })),
    status: 401,
    code: 'INVALID_TOKEN',
    verifications: 0,
  },
  {
    name: 'jku header to an attacker key set (no request to it)',
    mode: 'rs',
    authorization: () => bearer(rs256(attacker, rsClaims(), { jku: 'https://evil.test/jwks.json' })),
    status: 401,
    code: 'INVALID_TOKEN',
    maxFetches: 1,
  },
  {
    name: 'x5u header to an attacker certificate (no request to it)',
    mode: 'rs',
    authorization: () => bearer(rs256(attacker, rsClaims(), { x5u: 'https://evil.test/cert.pem' })),
    status: 401,
    code: 'INVALID_TOKEN',
    maxFetches: 1,
  },
  {
    name: 'embedded jwk header (attacker key)',
    mode: 'rs',
    authorization: () => bearer(rs256(attacker, rsClaims(), { jwk: attacker.jwk })),
    status: 401,
    code: 'INVALID_TOKEN',
    maxFetches: 1,
  },
  {
    name: 'embedded jwk header with our kid',
    mode: 'rs',
    authorization: () => bearer(rs256(attacker, rsClaims(), { kid: 'k1', jwk: attacker.jwk })),
    status: 401,
    code: 'INVALID_TOKEN',
    maxFetches: 1,
  },
  {
    name: 'kid path traversal ../../etc/passwd',
    mode: 'rs',
    authorization: () => bearer(rs256(attacker, rsClaims(), { kid: '../../etc/passwd' })),
    status: 401,
    code: 'INVALID_TOKEN',
    maxFetches: 1,
  },
  {
    name: 'kid SQL injection',
    mode: 'rs',
    authorization: () => bearer(rs256(attacker, rsClaims(), { kid: "k1' OR '1'='1" })),
    status: 401,
    code: 'INVALID_TOKEN',
    maxFetches: 1,
  },
  {
    name: 'kid very long (2000 chars)',
    mode: 'rs',
    authorization: () => bearer(rs256(attacker, rsClaims(), { kid: 'k'.repeat(2000) })),
    status: 401,
    code: 'INVALID_TOKEN',
    maxFetches: 0,
  },
  {
    name: 'kid not a string',
    mode: 'rs',
    authorization: () => bearer(rs256(good, rsClaims(), { kid: 1 })),
    status: 401,
    code: 'INVALID_TOKEN',
    maxFetches: 0,
  },
  {
    name: 'RS256 without kid',
    mode: 'rs',
    authorization: () => bearer(rs256(good, rsClaims(), { kid: undefined })),
    status: 401,
    code: 'INVALID_TOKEN',
    maxFetches: 0,
  },
  {
    name: 'RS256 with an unknown kid',
    mode: 'rs',
    authorization: () => bearer(rs256(good, rsClaims(), { kid: 'nobody' })),
    status: 401,
    code: 'INVALID_TOKEN',
    maxFetches: 1,
  },
  {
    name: 'string exp',
    mode: 'hs',
    authorization: () => bearer(hs256(claims({ exp: String(now() + 3600) }))),
    status: 401,
    code: 'INVALID_TOKEN',
  },
  {
    name: 'missing exp',
    mode: 'hs',
    authorization: () => bearer(hs256(claims({ exp: undefined }))),
    status: 401,
    code: 'INVALID_TOKEN',
  },
  {
    name: 'expired (HS256)',
    mode: 'hs',
    authorization: () => bearer(hs256(claims({ exp: now() - 60 }))),
    status: 401,
    code: 'TOKEN_EXPIRED',
  },
  {
    name: 'expired (RS256)',
    mode: 'rs',
    authorization: () => bearer(rs256(good, rsClaims({ exp: now() - 60 }))),
    status: 401,
    code: 'TOKEN_EXPIRED',
  },
  {
    name: 'expired beyond the clock tolerance',
    mode: 'hs',
    action: { clockTolerance: 30 },
    authorization: () => bearer(hs256(claims({ exp: now() - 60 }))),
    status: 401,
    code: 'TOKEN_EXPIRED',
  },
  {
    name: 'expired and badly signed (not TOKEN_EXPIRED)',
    mode: 'hs',
    authorization: () => bearer(hs256(claims({ exp: now() - 60 }), { secret: 'x'.repeat(40) })),
    status: 401,
    code: 'INVALID_TOKEN',
  },
  {
    name: 'nbf in the future',
    mode: 'hs',
    authorization: () => bearer(hs256(claims({ nbf: now() + 600 }))),
    status: 401,
    code: 'INVALID_TOKEN',
  },
  {
    name: 'wrong iss',
    mode: 'rs',
    authorization: () => bearer(rs256(good, claims({ iss: 'https://other.test/', aud: AUDIENCE }))),
    status: 401,
    code: 'INVALID_TOKEN',
  },
  {
    name: 'missing iss when JWT_ISSUER is set',
    mode: 'rs',
    authorization: () => bearer(rs256(good, claims({ aud: AUDIENCE }))),
    status: 401,
    code: 'INVALID_TOKEN',
  },
  {
    name: 'wrong aud',
    mode: 'rs',
    authorization: () => bearer(rs256(good, claims({ iss: ISSUER, aud: 'someone-else' }))),
    status: 401,
    code: 'INVALID_TOKEN',
  },
  {
    name: 'aud array without ours',
    mode: 'rs',
    authorization: () => bearer(rs256(good, claims({ iss: ISSUER, aud: ['a', 'b'] }))),
    status: 401,
    code: 'INVALID_TOKEN',
  },
  {
    name: 'non-string sub',
    mode: 'hs',
    authorization: () => bearer(hs256(claims({ sub: 42 }))),
    status: 401,
    code: 'INVALID_TOKEN',
  },
  {
    name: 'empty sub',
    mode: 'hs',
    authorization: () => bearer(hs256(claims({ sub: '' }))),
    status: 401,
    code: 'INVALID_TOKEN',
  },
  {
    name: 'blank sub',
    mode: 'hs',
    authorization: () => bearer(hs256(claims({ sub: '   ' }))),
    status: 401,
    code: 'INVALID_TOKEN',
  },
  {
    name: 'missing sub',
    mode: 'hs',
    authorization: () => bearer(hs256(claims({ sub: undefined }))),
    status: 401,
    code: 'INVALID_TOKEN',
  },
  {
    name: 'refresh token used as access token',
    mode: 'hs',
    authorization: () => bearer(hs256(claims({ type: 'refresh', jti: 'r1' }))),
    status: 401,
    code: 'INVALID_TOKEN',
  },
  {
    name: 'oversized token (> 8 KB) is not verified',
    mode: 'hs',
    authorization: () => bearer(hs256(claims({ pad: 'x'.repeat(9000) }))),
    status: 401,
    code: 'INVALID_TOKEN',
    verifications: 0,
  },
  {
    name: 'two-part token',
    mode: 'hs',
    authorization: () => bearer(hs256(claims()).split('.').slice(0, 2).join('.')),
    status: 401,
    code: 'INVALID_TOKEN',
    verifications: 0,
  },
  {
    name: 'four-part token',
    mode: 'hs',
    authorization: () => bearer(`${hs256(claims())}.${b64u('more')}`),
    status: 401,
    code: 'INVALID_TOKEN',
    verifications: 0,
  },
  {
    name: 'JWE-like five-part token',
    mode: 'hs',
    authorization: () => bearer('a.b.c.d.e'),
    status: 401,
    code: 'INVALID_TOKEN',
    verifications: 0,
  },
  {
    name: 'non-base64url garbage',
    mode: 'hs',
    authorization: () => bearer('!!!.@@@.###'),
    status: 401,
    code: 'INVALID_TOKEN',
    verifications: 0,
  },
  {
    name: 'standard base64 characters (+ / =)',
    mode: 'hs',
    authorization: () => bearer(hs256(claims()).replace(/\.([^.]+)$/, '.ab+/cd==')),
    status: 401,
    code: 'INVALID_TOKEN',
    verifications: 0,
  },
  {
    name: 'header not JSON',
    mode: 'hs',
    authorization: () => bearer(`${b64u('not json')}.${b64u('{}')}.${b64u('s')}`),
    status: 401,
    code: 'INVALID_TOKEN',
    verifications: 0,
  },
  {
    name: 'header a JSON array',
    mode: 'hs',
    authorization: () => bearer(`${b64u('["HS256"]')}.${b64u('{}')}.${b64u('s')}`),
    status: 401,
    code: 'INVALID_TOKEN',
    verifications: 0,
  },
  {
    name: 'payload not JSON (validly signed)',
    mode: 'hs',
    authorization: () => bearer(signedRaw('{"alg":"HS256"}', 'not json')),
    status: 401,
    code: 'INVALID_TOKEN',
  },
  {
    name: 'payload a JSON array (validly signed)',
    mode: 'hs',
    authorization: () => bearer(signedRaw('{"alg":"HS256"}', '["sub"]')),
    status: 401,
    code: 'INVALID_TOKEN',
  },
  {
    name: 'key of the wrong type under the kid (EC)',
    mode: 'rs',
    authorization: () => bearer(rs256(good, rsClaims(), { kid: 'ec1' })),
    status: 401,
    code: 'INVALID_TOKEN',
    maxFetches: 1,
  },
  {
    name: 'RSA key below 2048 bits (library TypeError)',
    mode: 'rs',
    authorization: () => bearer(rs256(small, rsClaims())),
    status: 401,
    code: 'INVALID_TOKEN',
    maxFetches: 1,
  },
  {
    name: 'malformed JWK under the kid',
    mode: 'rs',
    authorization: () => bearer(rs256(good, rsClaims(), { kid: 'broken' })),
    status: 401,
    code: 'INVALID_TOKEN',
    maxFetches: 1,
  },
  {
    name: 'key set unreachable',
    mode: 'rs',
    jwks: 'down',
    authorization: () => bearer(rs256(good, rsClaims())),
    status: 503,
    code: 'SERVICE_UNAVAILABLE',
    maxFetches: 1,
  },
  {
    name: 'key set answers 500',
    mode: 'rs',
    jwks: 'status-500',
    authorization: () => bearer(rs256(good, rsClaims())),
    status: 503,
    code: 'SERVICE_UNAVAILABLE',
    maxFetches: 1,
  },
  {
    name: 'key set answers non-JSON',
    mode: 'rs',
    jwks: 'not-json',
    authorization: () => bearer(rs256(good, rsClaims())),
    status: 503,
    code: 'SERVICE_UNAVAILABLE',
    maxFetches: 1,
  },
  {
    name: 'key set answers JSON that is not a key set',
    mode: 'rs',
    jwks: 'not-a-set',
    authorization: () => bearer(rs256(good, rsClaims())),
    status: 503,
    code: 'SERVICE_UNAVAILABLE',
    maxFetches: 1,
  },
  {
    name: 'key set redirects (not followed)',
    mode: 'rs',
    jwks: 'redirect',
    authorization: () => bearer(rs256(good, rsClaims())),
    status: 503,
    code: 'SERVICE_UNAVAILABLE',
    maxFetches: 1,
  },
  {
    name: 'key set times out',
    mode: 'rs',
    jwks: 'slow',
    action: { jwksTimeoutMs: 150 },
    authorization: () => bearer(rs256(good, rsClaims())),
    status: 503,
    code: 'SERVICE_UNAVAILABLE',
    maxFetches: 1,
  },
  {
    name: 'HS256 token while the key set is down (no fetch needed)',
    mode: 'both',
    jwks: 'down',
    authorization: () => bearer(hs256(claims({ exp: now() - 1 }))),
    status: 401,
    code: 'TOKEN_EXPIRED',
    maxFetches: 0,
  },
];

function signedRaw(header: string, payload: string): string {
  const { createHmac } = require('node:crypto') as typeof import('node:crypto');
  const input = `${b64u(header)}.${b64u(payload)}`;
  return `${input}.${createHmac('sha256', SECRET).update(input).digest('base64url')}`;
}

/** A key-set address on 127.0.0.1 that accepts the request and never answers (nock's delay does not hold fetch back). */
let silent: Server | undefined;
async function silentServer(counter: { n: number }): Promise<string> {
  nock.enableNetConnect('127.0.0.1');
  silent = createServer(() => counter.n++);
  await new Promise<void>((r) => silent!.listen(0, '127.0.0.1', r));
  const { port } = silent.address() as AddressInfo;
  return `http://127.0.0.1:${port}/jwks.json`;
}

function actionFor(c: Case): JwtDevAuthAction {
  const rs = { jwksUri: JWKS_URI, issuer: ISSUER, audience: AUDIENCE };
  const base = c.mode === 'hs' ? { jwtSecret: SECRET } : c.mode === 'rs' ? rs : { jwtSecret: SECRET, ...rs };
  return { ...base, ...c.action };
}

function mockJwks(behaviour: JwksBehaviour, counter: { n: number }): void {
  const host = nock(JWKS_HOST).persist();
  host.on('request', () => counter.n++);
  const scope = host.get(JWKS_PATH);
  switch (behaviour) {
    case 'ok':
      scope.reply(200, { keys: KEYS });
      break;
    case 'down':
      scope.replyWithError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
      break;
    case 'status-500':
      scope.reply(500, { error: 'boom' });
      break;
    case 'not-json':
      scope.reply(200, '<html>maintenance</html>', { 'content-type': 'text/html' });
      break;
    case 'not-a-set':
      scope.reply(200, { hello: 'world' });
      break;
    case 'redirect':
      scope.reply(302, '', { location: 'https://evil.test/jwks.json' });
      break;
    case 'slow':
      break; // a local server that never answers, see below
  }
}

describe('jwt-dev-auth: refused tokens (table)', () => {
  isolateAuthEnv();
  useNock();
  let evil: nock.Scope;

  beforeEach(() => {
    runtime.services.verifiers.clear();
    nock.cleanAll();
    nock.disableNetConnect();
    evil = nock('https://evil.test')
      .persist()
      .get(/.*/)
      .reply(200, { keys: [attacker.jwk] });
  });
  afterEach(() => {
    silent?.closeAllConnections();
    silent?.close();
    silent = undefined;
    nock.cleanAll();
    nock.enableNetConnect();
  });

  it('has at least 30 cases', () => expect(CASES.length).to.be.at.least(30));

  for (const c of CASES) {
    it(`${c.name} → ${c.status} ${c.code}`, async () => {
      const counter = { n: 0 };
      mockJwks(c.jwks ?? 'ok', counter);
      const action = actionFor(c);
      if (c.jwks === 'slow') action.jwksUri = await silentServer(counter);
      const mw = jwtDevAuthPolicy(runtime.services).policy(action);
      const req = fakeReq({ authorization: c.authorization(), 'x-correlation-id': 'case-1' });
      const out = await run(mw, req);
      expect(out.next, 'request must not pass').to.equal(false);
      expect(out.status).to.equal(c.status);
      expect(out.body.code).to.equal(c.code);
      expect(out.body.correlationId).to.equal('case-1');
      expect(out.headers['x-correlation-id']).to.equal('case-1');
      expect(requestContext(req).caller).to.equal(undefined);
      if (c.status === 401) {
        expect(out.headers['www-authenticate']).to.match(/^Bearer\b/);
        expect(out.body.error).to.equal('Unauthorized');
      }
      if (c.status === 503) {
        expect(out.headers['retry-after']).to.match(/^[1-9]\d*$/);
        expect(out.body.retryAfter).to.equal(Number(out.headers['retry-after']));
      }
      expect(JSON.stringify(out.body)).not.to.match(/stack|TypeError|node_modules|jose|ERR_/i);
      expect(evil.isDone(), 'no request to a host named by the token').to.equal(false);
      if (c.maxFetches !== undefined) expect(counter.n, 'key-set fetches').to.be.at.most(c.maxFetches);
      if (c.verifications !== undefined)
        expect(verifierFor(runtime, action).stats.verifications).to.equal(c.verifications);
    });
  }
});
