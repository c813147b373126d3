import { expect } from 'chai';
import type Redis from 'ioredis';
import { eventually, startGateway, type GatewayProcess } from '../support/gateway-process';
import { postFrom } from '../support/local-address';
import { httpAs } from '../support/http';
import { uniquePrefix } from '../support/env';
import { connectRedis, deleteKeys, REDIS } from '../support/redis';

describe('rate limits shared by two gateway replicas through Redis', function () {
  this.timeout(60000);
  const prefix = uniquePrefix('rl');
  const env = {
    BUS_URL: 'embedded',
    EG_DB_EMULATE: 'false',
    REDIS_HOST: REDIS.host,
    REDIS_PORT: String(REDIS.port),
    RATE_LIMIT_MAX: '4',
    RATE_LIMIT_WINDOW_MS: '60000',
    RATE_LIMIT_PREFIX: prefix,
    PUBLIC_RATE_LIMIT_MAX: '3',
  };
  let redis: Redis;
  let one: GatewayProcess;
  let two: GatewayProcess;

  before(async () => {
    redis = await connectRedis();
    [one, two] = await Promise.all([startGateway(env), startGateway(env)]);
  });
  after(async () => {
    await Promise.all([one?.stop(), two?.stop()]);
    if (redis) {
      await deleteKeys(redis, `rl:${prefix}:*`);
      redis.disconnect();
    }
  });

  it("counts one caller's requests on both replicas against one budget", async () => {
    const user = httpAs(['admin:all'], 'replicated-user');
    const remaining: Array<string | null> = [];
    for (const gw of [one, two, one, two]) {
      const res = await user('GET', `${gw.baseUrl}/api/users`);
      expect(res.status, res.text).to.equal(200);
      remaining.push(res.headers.get('x-ratelimit-remaining'));
    }
    expect(remaining).to.deep.equal(['3', '2', '1', '0']);
    for (const gw of [one, two]) {
      const over = await user('GET', `${gw.baseUrl}/api/users`);
      expect(over.status).to.equal(429);
      expect(over.body.code).to.equal('RATE_LIMIT_EXCEEDED');
    }
    // The counter is in Redis under this run's namespace, with the window as its expiry.
    expect(await redis.get(`rl:${prefix}:all:u:replicated-user`)).to.equal('6');
    expect(await redis.pttl(`rl:${prefix}:all:u:replicated-user`)).to.be.within(1, 60000);
  });

  it("counts an address's requests to a public contract on both replicas against one budget, whatever its token", async () => {
    // Both replicas serve the login route (their services announced it), asked from another address.
    for (const gw of [one, two])
      await eventually(async () => {
        const ready = await postFrom(false, '127.0.0.4', `${gw.baseUrl}/api/login`, {
          email: 'a@example.com',
          password: 'p',
        });
        expect(ready.status).to.equal(401);
      }, 30000);
    const user = httpAs(['admin:all'], 'public-route-user');
    const statuses: number[] = [];
    for (const gw of [one, two, one, two]) {
      const res = await user('POST', `${gw.baseUrl}/api/login`, {
        body: { email: 'nobody@example.com', password: 'wrong-password-1' },
      });
      statuses.push(res.status);
      if (res.status === 429) {
        expect(res.body.code).to.equal('RATE_LIMIT_EXCEEDED');
        expect(res.headers.get('retry-after')).to.equal(String(res.body.retryAfter));
      }
    }
    expect(statuses).to.deep.equal([401, 401, 401, 429]);
    expect(await redis.get(`rl:${prefix}:p:ip:127.0.0.1`)).to.equal('4');
    // The caller's own budget is counted apart and untouched by the refused request.
    expect(await redis.get(`rl:${prefix}:all:u:public-route-user`)).to.equal('3');
  });

  it("keeps other callers' budgets apart", async () => {
    const res = await httpAs(['admin:all'], 'other-replicated-user')('GET', `${two.baseUrl}/api/users`);
    expect(res.status).to.equal(200);
    expect(res.headers.get('x-ratelimit-remaining')).to.equal('3');
  });
});
