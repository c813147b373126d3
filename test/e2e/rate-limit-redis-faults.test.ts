import { expect } from 'chai';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type Redis from 'ioredis';
import { eventually, startGateway, type GatewayProcess } from '../support/gateway-process';
import { http, httpAs, type HttpResult } from '../support/http';
import { AMQP_URL, freePort, uniquePrefix } from '../support/env';
import { AmqpTransport } from '../../plugin/bus/amqp';
import { serve, type RunningService } from '../../sdk';
import { connectRedis, deleteKeys, REDIS } from '../support/redis';
import { TcpProxy } from '../support/tcp-proxy';
import { sample, scrape } from '../observability/support';

const P = 'contracts_gateway_';
const ROOT = resolve(__dirname, '..', '..', '..');
/** What the issue asks of every request, whatever Redis does. */
const ANSWER_WITHIN_MS = 2000;

/**
 * The rate-limit store (the machine's Redis, behind a TCP proxy the test cuts, refuses and stalls) failing under a
 * gateway: every rate-limited request is answered within 2 s, let through (open, the default) or refused 503
 * (closed); the log says so, the metrics count it, /health shows the store degraded; when Redis is back, counting
 * resumes. Once with the shipped system.config.yml (ioredis told to fail fast) and once with ioredis at its own
 * defaults (offline queue, 20 retries), which only the plugin's own timeout keeps from holding requests.
 */
const CASES = [
  { title: 'shipped Redis client options, fail open (the default)', mode: undefined, clientDefaults: false },
  { title: 'ioredis at its defaults, fail closed', mode: 'closed', clientDefaults: true },
] as const;

for (const c of CASES) {
  describe(`rate limits when Redis fails: ${c.title}`, function () {
    this.timeout(120000);
    const prefix = uniquePrefix('rlf');
    const user = httpAs(['admin:all'], `store-fault-${c.mode ?? 'open'}`);
    const closed = c.mode === 'closed';
    let proxy: TcpProxy;
    let redis: Redis;
    let gw: GatewayProcess;
    let configDir: string;
    let metricsUrl: string;
    let transport: AmqpTransport;
    let service: RunningService | undefined;

    before(async () => {
      proxy = new TcpProxy(REDIS);
      const port = await proxy.listen();
      redis = await connectRedis();
      configDir = mkdtempSync(join(tmpdir(), 'contracts-rlf-'));
      if (c.clientDefaults) {
        cpSync(join(ROOT, 'config'), configDir, { recursive: true });
        const file = join(configDir, 'system.config.yml');
        const stripped = readFileSync(file, 'utf8').replace(
          /^ {4}(enableOfflineQueue|maxRetriesPerRequest|connectTimeout|commandTimeout):.*\n/gm,
          '',
        );
        expect(stripped).not.to.match(/enableOfflineQueue|commandTimeout/);
        writeFileSync(file, stripped);
      }
      const metricsPort = await freePort();
      metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
      // A service of the test's own on RabbitMQ: no reference services (and their database) to start.
      const busPrefix = uniquePrefix('rlf-bus');
      transport = new AmqpTransport(AMQP_URL, { prefix: busPrefix });
      await transport.start();
      service = await serve({
        transport,
        service: 'widgets-service',
        operations: [
          {
            contract: {
              messageType: 'ListWidgetsQuery',
              inputSchema: { type: 'object' },
              outputSchema: { type: 'object' },
              requiredPermissions: ['widgets:read'],
            },
            handle: () => ({ widgets: [] }),
          },
        ],
      });
      gw = await startGateway(
        {
          BUS_URL: AMQP_URL,
          BUS_PREFIX: busPrefix,
          START_REFERENCE_SERVICES: 'false',
          EG_DB_EMULATE: 'false',
          REDIS_HOST: '127.0.0.1',
          REDIS_PORT: String(port),
          RATE_LIMIT_MAX: '1000',
          RATE_LIMIT_PREFIX: prefix,
          RATE_LIMIT_ON_STORE_FAILURE: c.mode,
          METRICS_PORT: String(metricsPort),
          METRICS_HOST: '127.0.0.1',
          ACCESS_LOG: 'false',
          LOG_LEVEL: 'info',
        },
        { configDir },
      );
    });
    after(async () => {
      await service?.stop().catch(() => undefined);
      await transport?.close().catch(() => undefined);
      await gw?.stop();
      await proxy?.close();
      if (redis) {
        await deleteKeys(redis, `rl:${prefix}:*`);
        redis.disconnect();
      }
      if (configDir) rmSync(configDir, { recursive: true, force: true });
    });

    /** One rate-limited request, timed. */
    async function timed(): Promise<HttpResult & { ms: number }> {
      const started = Date.now();
      const res = await user('GET', `${gw.baseUrl}/api/widgets`);
      return { ...res, ms: Date.now() - started };
    }

    /** Counting works: the limiter's headers, the counter in Redis, /health ok, the gauge 1. */
    async function expectCounting(): Promise<void> {
      const res = await eventually(
        async () => {
          const r = await timed();
          // Retried: the route appears once the gateway has heard the service.
          expect(r.status, r.text).to.equal(200);
          expect(r.headers.get('x-ratelimit-remaining'), 'counted').to.match(/^\d+$/);
          return r;
        },
        15000,
        200,
      );
      expect(res.headers.get('x-ratelimit-limit')).to.equal('1000');
      const health = await http('GET', `${gw.baseUrl}/health`);
      expect(health.status).to.equal(200);
      expect(health.body).to.deep.include({ status: 'ok', rateLimitStore: { state: 'ok' } });
      expect(sample(await scrape(metricsUrl), `${P}rate_limit_store_up`)).to.equal(1);
    }

    /** While Redis is away: every request answered in time, the same way; /health degraded; the metrics and the log. */
    async function expectDegraded(what: string): Promise<void> {
      const before = await scrape(metricsUrl);
      const warned = occurrences(gw.output(), 'rate limit store unavailable (');
      const answers = [];
      for (let i = 0; i < 8; i++) answers.push(await timed());
      for (const a of answers) {
        expect(a.ms, `${what}: answered in ${a.ms} ms`).to.be.below(ANSWER_WITHIN_MS);
        expect(a.headers.get('x-ratelimit-remaining'), 'not counted').to.equal(null);
        if (closed) {
          expect(a.status, a.text).to.equal(503);
          expect(a.body).to.include({ code: 'SERVICE_UNAVAILABLE', retryAfter: 5 });
          expect(a.headers.get('retry-after')).to.equal('5');
          expect(a.text).not.to.match(/ECONN|Redis|ioredis|6379|stack/i);
        } else {
          // The service's own answer, uncounted.
          expect(a.status, a.text).to.equal(200);
          expect(a.body).to.be.an('object');
        }
      }
      const health = await http('GET', `${gw.baseUrl}/health`);
      expect(health.status, 'degraded, not down').to.equal(200);
      expect(health.body.status).to.equal('degraded');
      expect(health.body.rateLimitStore.state).to.equal('degraded');
      expect(Date.parse(health.body.rateLimitStore.since)).to.be.a('number').and.not.NaN;
      const after = await scrape(metricsUrl);
      expect(sample(after, `${P}rate_limit_store_up`)).to.equal(0);
      const outcome = closed ? 'refused' : 'allowed';
      const bypassed =
        sample(after, `${P}rate_limit_store_bypassed_total`, { outcome }) -
        sample(before, `${P}rate_limit_store_bypassed_total`, { outcome });
      expect(bypassed).to.be.at.least(7);
      const consequence = closed ? 'rate-limited requests are refused 503' : 'rate-limited requests pass uncounted';
      expect(gw.output()).to.match(
        new RegExp(`rate limit store unavailable \\(.+\\); ${consequence} until it answers again`),
      );
      expect(occurrences(gw.output(), 'rate limit store unavailable ('), 'one line for this outage').to.equal(
        warned + 1,
      );
    }

    /** `recovered`: the recovery lines before Redis was given back. */
    async function expectBack(recovered: number): Promise<void> {
      await expectCounting();
      expect(occurrences(gw.output(), 'counting resumes')).to.equal(recovered + 1);
      expect(gw.output()).to.match(
        /rate limit store answers again after \d+ s \(\d+ requests (let through uncounted|refused 503) meanwhile\); counting resumes/,
      );
    }

    it('counts in Redis while it answers', async () => {
      await expectCounting();
      expect(Number(await redis.get(`rl:${prefix}:all:u:store-fault-${c.mode ?? 'open'}`))).to.be.at.least(1);
    });

    it('Redis cut and refusing: answered in time; counting resumes when it is back', async () => {
      proxy.refusing = true;
      proxy.killAll();
      await expectDegraded('refused');
      const recovered = occurrences(gw.output(), 'counting resumes');
      proxy.refusing = false;
      await expectBack(recovered);
    });

    it('Redis stalled (commands sent, never answered): answered in time; counting resumes when it answers', async () => {
      proxy.stall();
      let recovered: number;
      try {
        await expectDegraded('stalled');
      } finally {
        recovered = occurrences(gw.output(), 'counting resumes');
        proxy.resume();
      }
      await expectBack(recovered);
    });

    it('a connection cut once (Redis restarted): answered in time, and counting goes on', async () => {
      proxy.killAll();
      for (let i = 0; i < 4; i++) {
        const a = await timed();
        expect(a.ms).to.be.below(ANSWER_WITHIN_MS);
        expect(a.status).to.equal(closed && a.headers.get('x-ratelimit-remaining') === null ? 503 : 200);
      }
      await expectCounting();
    });
  });
}

function occurrences(text: string, part: string): number {
  return text.split(part).length - 1;
}
