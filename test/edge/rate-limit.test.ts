import { expect } from 'chai';
import type { Request, Response } from 'express';
import { callerKey, counterKey, limitFor, retryAfterSeconds, tooManyRequests } from '../../plugin/edge/rate-limit';
import { LimiterCache, type LimiterFactory } from '../../plugin/edge/host-rate-limit';
import { toErrorBody } from '../../plugin/errors';
import { TokenVerifier } from '../../plugin/auth/verify-token';
import { resolveAuthConfig } from '../../plugin/auth/auth-config';
import { mintToken, TEST_JWT_SECRET } from '../support/tokens';

const settings = { rateLimitMax: 100, rateLimitWindowMs: 60000 };

function fakeReq(headers: Record<string, string> = {}, ip = '10.0.0.7'): Request {
  return { headers, ip, socket: { remoteAddress: ip } } as unknown as Request;
}

describe('rate limit selection and keys', () => {
  it('a contract\'s own limit replaces the gateway-wide one, with a counter of its own', () => {
    expect(limitFor({ messageType: 'ExportQuery', rateLimit: { max: 2, windowMs: 5000 } }, settings)).to.deep.equal({ scope: 'c:ExportQuery', max: 2, windowMs: 5000 });
    expect(limitFor({ messageType: 'ExportQuery', rateLimit: { max: 2 } }, settings)).to.deep.equal({ scope: 'c:ExportQuery', max: 2, windowMs: 60000 });
    expect(limitFor({ messageType: 'ListUsersQuery' }, settings)).to.deep.equal({ scope: 'all', max: 100, windowMs: 60000 });
    expect(limitFor(undefined, settings)).to.deep.equal({ scope: 'all', max: 100, windowMs: 60000 });
  });

  it('no limit at all when neither the contract nor the settings set one', () => {
    expect(limitFor({ messageType: 'ListUsersQuery' }, { rateLimitMax: undefined, rateLimitWindowMs: 60000 })).to.equal(undefined);
  });

  it('a hand-written pipeline\'s max wins over both', () => {
    expect(limitFor({ messageType: 'X', rateLimit: { max: 2 } }, settings, { max: 9, scope: 'login' })).to.deep.equal({ scope: 'r:login', max: 9, windowMs: 60000 });
  });

  it('keys by the verified user, and by the client address when the token does not verify', async () => {
    const verifier = new TokenVerifier(resolveAuthConfig({}, { JWT_SECRET: TEST_JWT_SECRET }));
    const good = fakeReq({ authorization: `Bearer ${await mintToken({ sub: 'alice' })}` });
    expect(await callerKey(good, verifier, false)).to.equal('u:alice');
    // Same claims, signed with another key: an attacker's fresh `sub` must not buy a fresh budget.
    const forged = fakeReq({ authorization: `Bearer ${await mintToken({ sub: 'mallory-1' }, 'x'.repeat(40))}` });
    expect(await callerKey(forged, verifier, false)).to.equal('ip:10.0.0.7');
    const anonymous = fakeReq({}, '192.0.2.1');
    expect(await callerKey(anonymous, verifier, false)).to.equal('ip:192.0.2.1');
  });

  it('keys development users by their id only in development mode', async () => {
    const verifier = new TokenVerifier(resolveAuthConfig({}, { JWT_SECRET: TEST_JWT_SECRET }));
    const req = fakeReq({ 'x-dev-user-id': 'dev-7' });
    expect(await callerKey(req, verifier, true)).to.equal('u:dev-7');
    expect(await callerKey(req, verifier, false)).to.equal('ip:10.0.0.7');
  });

  it('bounds the key of a very long user id', async () => {
    const verifier = new TokenVerifier(resolveAuthConfig({}, { JWT_SECRET: TEST_JWT_SECRET }));
    const key = await callerKey(fakeReq({ 'x-dev-user-id': 'u'.repeat(1000) }), verifier, true);
    expect(key).to.match(/^uh:[A-Za-z0-9_-]{43}$/);
    expect(counterKey('run', { scope: 'all', max: 1, windowMs: 1000 }, key)).to.equal(`run:all:${key}`);
  });

  it('Retry-After: whole seconds to the reset, at least 1; the window when the store gave no time', () => {
    expect(retryAfterSeconds(new Date(10_500), 60000, 9_000)).to.equal(2);
    expect(retryAfterSeconds(new Date(8_000), 60000, 9_000)).to.equal(1);
    expect(retryAfterSeconds(null, 30000, 9_000)).to.equal(30);
  });

  it('429 is the error body with retryAfter and a Retry-After header', () => {
    const { status, body, headers } = toErrorBody(tooManyRequests(7), 'cid-1');
    expect(status).to.equal(429);
    expect(body).to.include({ error: 'Too Many Requests', code: 'RATE_LIMIT_EXCEEDED', retryAfter: 7, correlationId: 'cid-1' });
    expect(headers).to.deep.equal({ 'Retry-After': '7' });
  });
});

describe('LimiterCache', () => {
  it('builds one limiter per (max, windowMs) with our key and answer and without the host\'s delay', () => {
    const made: Array<Record<string, unknown>> = [];
    const factory: LimiterFactory = (params) => {
      made.push(params);
      return (_req: Request, _res: Response, next) => next();
    };
    const keyGenerator = () => 'k';
    const handler = () => undefined;
    const cache = new LimiterCache({ keyGenerator, handler }, () => factory);
    const a = cache.limiter(5, 60000);
    expect(cache.limiter(5, 60000)).to.equal(a);
    expect(cache.limiter(5, 1000)).not.to.equal(a);
    expect(made).to.have.length(2);
    expect(made[0]).to.include({ max: 5, windowMs: 60000, delayMs: 0, delayAfter: 0, headers: true, keyGenerator, handler });
  });

  it('with express-rate-limit itself: counts per key, answers through our handler once over, never delays', async () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const RateLimit = require('express-rate-limit') as LimiterFactory;
    const answered: string[] = [];
    const cache = new LimiterCache(
      { keyGenerator: (req) => String(req.headers['x-key']), handler: (req) => answered.push(String(req.headers['x-key'])) },
      () => (params) => RateLimit(params),
    );
    const limiter = cache.limiter(2, 60000);
    const run = (key: string) =>
      new Promise<string>((resolve) => {
        const headers: Record<string, unknown> = {};
        const res = { setHeader: (n: string, v: unknown) => (headers[n] = v) } as unknown as Response;
        const before = answered.length;
        limiter({ headers: { 'x-key': key } } as unknown as Request, res, () => resolve(`next ${headers['X-RateLimit-Remaining']}`));
        if (answered.length > before) resolve('limited');
      });
    const started = Date.now();
    expect(await run('a')).to.equal('next 1');
    expect(await run('a')).to.equal('next 0');
    expect(await run('a')).to.equal('limited');
    expect(await run('b')).to.equal('next 1');
    expect(Date.now() - started, 'no artificial delay').to.be.below(500);
  });
});
