import { expect } from 'chai';
import { EventEmitter } from 'node:events';
import type { Request } from 'express';
import {
  addressKey,
  callerKey,
  counterKey,
  limitFor,
  publicLimitFor,
  retryAfterSeconds,
  tooManyRequests,
} from '../../plugin/edge/rate-limit';
import {
  LimiterCache,
  RateLimitState,
  Tally,
  type Limiter,
  type LimiterFactory,
  type LimiterOptions,
} from '../../plugin/host/rate-limiters';
import {
  StoreHealth,
  STORE_WARNING_INTERVAL_MS,
  type StoreClient,
  type StoreMetrics,
  type StoreState,
} from '../../plugin/edge/store-health';
import type { Logger } from '../../plugin/logger';
import { toErrorBody } from '../../plugin/errors/error-body';
import { TokenVerifier } from '../../plugin/auth/verify-token';
import { resolveAuthConfig } from '../../plugin/settings/auth';
import { mintToken, TEST_JWT_SECRET } from '../support/tokens';

const settings = { rateLimitMax: 100, rateLimitWindowMs: 60000 };

function fakeReq(headers: Record<string, string> = {}, ip = '10.0.0.7'): Request {
  return { headers, ip, socket: { remoteAddress: ip } } as unknown as Request;
}

describe('rate limit selection and keys', () => {
  it("a contract's own limit replaces the gateway-wide one, with a counter of its own", () => {
    expect(limitFor({ messageType: 'ExportQuery', rateLimit: { max: 2, windowMs: 5000 } }, settings)).to.deep.equal({
      scope: 'c:ExportQuery',
      max: 2,
      windowMs: 5000,
    });
    expect(limitFor({ messageType: 'ExportQuery', rateLimit: { max: 2 } }, settings)).to.deep.equal({
      scope: 'c:ExportQuery',
      max: 2,
      windowMs: 60000,
    });
    expect(limitFor({ messageType: 'ListUsersQuery' }, settings)).to.deep.equal({
      scope: 'all',
      max: 100,
      windowMs: 60000,
    });
    expect(limitFor(undefined, settings)).to.deep.equal({ scope: 'all', max: 100, windowMs: 60000 });
  });

  it('no limit at all when neither the contract nor the settings set one', () => {
    expect(limitFor({ messageType: 'ListUsersQuery' }, { rateLimitMax: undefined, rateLimitWindowMs: 60000 })).to.equal(
      undefined,
    );
  });

  it("a hand-written pipeline's max wins over both", () => {
    expect(limitFor({ messageType: 'X', rateLimit: { max: 2 } }, settings, { max: 9, scope: 'login' })).to.deep.equal({
      scope: 'r:login',
      max: 9,
      windowMs: 60000,
    });
  });

  it("a public contract has a per-address limit of its own, beside the contract's own, unless it is off", () => {
    const on = { publicRateLimitMax: 60, publicRateLimitWindowMs: 60000 };
    expect(publicLimitFor({ public: true }, on)).to.deep.equal({ scope: 'p', max: 60, windowMs: 60000 });
    for (const contract of [{ public: false }, {}, undefined])
      expect(publicLimitFor(contract, on), JSON.stringify(contract)).to.equal(undefined);
    expect(
      publicLimitFor({ public: true }, { publicRateLimitMax: undefined, publicRateLimitWindowMs: 60000 }),
    ).to.equal(undefined);
    expect(counterKey('contracts', publicLimitFor({ public: true }, on)!, 'ip:192.0.2.1')).to.equal(
      'contracts:p:ip:192.0.2.1',
    );
  });

  it('keys a public limit by the client address whatever token the request carries', async () => {
    const req = fakeReq({ authorization: `Bearer ${await mintToken({ sub: 'alice' })}` }, '192.0.2.9');
    expect(addressKey(req)).to.equal('ip:192.0.2.9');
    // req.ip is the host's verdict (its trust proxy setting): a forged X-Forwarded-For is not read here.
    expect(addressKey(fakeReq({ 'x-forwarded-for': '203.0.113.5' }, '192.0.2.9'))).to.equal('ip:192.0.2.9');
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
    expect(body).to.include({
      error: 'Too Many Requests',
      code: 'RATE_LIMIT_EXCEEDED',
      retryAfter: 7,
      correlationId: 'cid-1',
    });
    expect(headers).to.deep.equal({ 'Retry-After': '7' });
  });
});

describe('LimiterCache', () => {
  it("builds one limiter per (max, windowMs) with our key and answer and without the host's delay", () => {
    const made: Array<Record<string, unknown>> = [];
    const factory: LimiterFactory = (params) => {
      made.push(params);
      return (_req, _res, next) => next();
    };
    const cache = new LimiterCache(() => factory);
    const a = cache.limiter(5, 60000);
    expect(cache.limiter(5, 60000)).to.equal(a);
    expect(cache.limiter(5, 1000)).not.to.equal(a);
    expect(made).to.have.length(2);
    expect(made[0]).to.include({ max: 5, windowMs: 60000, delayMs: 0, delayAfter: 0, headers: true });
    const tally = new Tally('the-key');
    expect((made[0].keyGenerator as LimiterOptions['keyGenerator'])(tally, tally)).to.equal('the-key');
  });

  it('with express-rate-limit itself: counts per key, reports over the limit in the tally, never delays', async () => {
    const cache = new LimiterCache(() => hostRateLimit);
    const limiter = cache.limiter(2, 60000);
    const run = (key: string) =>
      new Promise<string>((resolve) => {
        const tally = new Tally(key);
        limiter(tally, tally, () =>
          resolve(tally.over ? 'limited' : `next ${String(new Map(tally.headers).get('X-RateLimit-Remaining'))}`),
        );
      });
    const started = Date.now();
    expect(await run('a')).to.equal('next 1');
    expect(await run('a')).to.equal('next 0');
    expect(await run('a')).to.equal('limited');
    expect(await run('b')).to.equal('next 1');
    expect(Date.now() - started, 'no artificial delay').to.be.below(500);
  });
});

// eslint-disable-next-line @typescript-eslint/no-require-imports
const RateLimit = require('express-rate-limit') as (options: Record<string, unknown>) => Limiter;

/** express-rate-limit (the host's limiter) over a store whose answers the test decides: the real counting, a chosen fault. */
class ScriptedStore {
  mode: 'answer' | 'fail' | 'stall' = 'answer';
  private readonly counts = new Map<string, number>();
  incr(key: string, cb: (err: Error | null, count?: number, reset?: Date) => void): void {
    if (this.mode === 'fail') return void setImmediate(() => cb(new Error('connect ECONNREFUSED 127.0.0.1:6379')));
    if (this.mode === 'stall') return;
    const n = (this.counts.get(key) ?? 0) + 1;
    this.counts.set(key, n);
    setImmediate(() => cb(null, n, new Date(Date.now() + 60000)));
  }
  resetKey(): void {}
}

const hostRateLimit: LimiterFactory = (params) => RateLimit(params);

function recordingLog(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const at = (level: string) => (m: string) => void lines.push(`${level} ${m}`);
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

function recordingMetrics() {
  const metrics = {
    states: [] as StoreState[],
    failures: [] as string[],
    bypasses: [] as string[],
    rateLimitStoreState: (s: StoreState) => void metrics.states.push(s),
    rateLimitStoreFailure: (r: string) => void metrics.failures.push(r),
    rateLimitStoreBypass: (o: string) => void metrics.bypasses.push(o),
  };
  return metrics satisfies StoreMetrics;
}

describe('RateLimitState: a store that fails, stalls or comes back', () => {
  let state: RateLimitState | undefined;
  afterEach(() => state?.close());

  function setUp(mode: 'open' | 'closed' = 'open', client?: StoreClient) {
    const store = new ScriptedStore();
    const log = recordingLog();
    const metrics = recordingMetrics();
    state = new RateLimitState({
      log,
      mode,
      timeoutMs: 100,
      metrics,
      loadFactory: () => (params) => RateLimit({ ...params, store }),
      ...(client ? { loadClient: () => client } : {}),
    });
    if (client) state.attachHost();
    return { store, log, metrics, state };
  }

  it('counts while the store answers: headers, and over the limit', async () => {
    const { state } = setUp();
    const first = await state.count('k', 1, 60000);
    expect(first).to.include({ kind: 'counted', over: false });
    expect(
      new Map((first as { headers: ReadonlyArray<[string, unknown]> }).headers).get('X-RateLimit-Remaining'),
    ).to.equal(0);
    expect(await state.count('k', 1, 60000)).to.include({ kind: 'counted', over: true });
    expect(state.store.state()).to.equal('ok');
  });

  it('a stalled store: the request waits the timeout, not longer; later ones do not wait at all', async () => {
    const { store, log, metrics, state } = setUp();
    store.mode = 'stall';
    let started = Date.now();
    expect(await state.count('k', 5, 60000)).to.deep.equal({ kind: 'unavailable' });
    expect(Date.now() - started).to.be.within(90, 400);
    started = Date.now();
    expect(await state.count('k', 5, 60000)).to.deep.equal({ kind: 'unavailable' });
    expect(Date.now() - started, 'degraded: no wait').to.be.below(50);
    expect(state.store.state()).to.equal('degraded');
    expect(metrics.failures).to.deep.equal(['timeout']);
    expect(metrics.bypasses).to.deep.equal(['allowed', 'allowed']);
    expect(metrics.states).to.deep.equal(['ok', 'degraded']);
    expect(log.lines.filter((l) => l.startsWith('warn'))).to.deep.equal([
      'warn rate limit store unavailable (no answer within 100 ms); rate-limited requests pass uncounted until it answers again',
    ]);
  });

  it("a failing store: the store's error is logged once, each refused request counted as refused (closed)", async () => {
    const { store, log, metrics, state } = setUp('closed');
    store.mode = 'fail';
    for (let i = 0; i < 3; i++) expect(await state.count('k', 5, 60000)).to.deep.equal({ kind: 'unavailable' });
    expect(metrics.failures).to.deep.equal(['error']);
    expect(metrics.bypasses).to.deep.equal(['refused', 'refused', 'refused']);
    expect(log.lines.filter((l) => l.startsWith('warn'))).to.have.length(1);
    expect(log.lines[0]).to.contain('ECONNREFUSED').and.contain('refused 503');
  });

  it('a client that is not connected fails at once, and a probe brings counting back when it answers', async () => {
    const client = {
      status: 'reconnecting',
      pings: 0,
      async ping() {
        this.pings++;
        return 'PONG';
      },
    };
    const { log, metrics, state } = setUp('open', client);
    expect(state.store.state(), 'judged by the client before any request').to.equal('degraded');
    const started = Date.now();
    expect(await state.count('k', 5, 60000)).to.deep.equal({ kind: 'unavailable' });
    expect(Date.now() - started).to.be.below(50);
    expect(metrics.failures).to.deep.equal(['not_connected']);
    client.status = 'ready';
    await new Promise((r) => setTimeout(r, 1300));
    expect(client.pings).to.be.at.least(1);
    expect(state.store.state()).to.equal('ok');
    expect(metrics.states.at(-1)).to.equal('ok');
    expect(await state.count('k', 5, 60000)).to.include({ kind: 'counted' });
    expect(log.lines.at(-1)).to.match(
      /^info rate limit store answers again after \d+ s \(1 requests let through uncounted meanwhile\); counting resumes$/,
    );
  });

  it('a client still connecting (a start, a blip) is waited for until the timeout, and counts once ready', async () => {
    const client = Object.assign(new EventEmitter(), {
      status: 'connecting',
      async ping() {
        return 'PONG';
      },
    });
    const { metrics, state } = setUp('open', client);
    expect(state.store.state(), 'a first connect is not an outage').to.equal('ok');
    setTimeout(() => {
      client.status = 'ready';
      client.emit('ready');
    }, 30);
    expect(await state.count('k', 5, 60000)).to.include({ kind: 'counted' });
    expect(metrics.failures).to.deep.equal([]);
    client.status = 'connecting';
    const started = Date.now();
    expect(await state.count('k', 5, 60000), 'not ready by the timeout').to.deep.equal({ kind: 'unavailable' });
    expect(Date.now() - started).to.be.within(90, 400);
    expect(metrics.failures).to.deep.equal(['not_connected']);
    expect(client.listenerCount('ready'), 'no listener left behind').to.equal(0);
  });

  it('while degraded, a summary line at most every 10 s', () => {
    const log = recordingLog();
    const health = new StoreHealth({ log, mode: 'open', client: () => undefined, probeIntervalMs: 60000 });
    try {
      health.failed('error', 'boom');
      const t0 = Date.now();
      for (let i = 0; i < 5; i++) health.bypassed(t0 + i * 1000);
      health.bypassed(t0 + STORE_WARNING_INTERVAL_MS + 1);
      health.bypassed(t0 + STORE_WARNING_INTERVAL_MS + 2);
      expect(log.lines).to.deep.equal([
        'warn rate limit store unavailable (boom); rate-limited requests pass uncounted until it answers again',
        'warn rate limit store still unavailable: 6 requests let through uncounted in the last 10 s',
      ]);
    } finally {
      health.close();
    }
  });
});
