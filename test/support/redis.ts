import Redis from 'ioredis';

/** The Redis of this machine, as the gateways reach it through system.config.yml (REDIS_HOST / REDIS_PORT). */
export const REDIS = {
  host: process.env.TEST_REDIS_HOST ?? '127.0.0.1',
  port: Number(process.env.TEST_REDIS_PORT ?? 6379),
};

/** A connection to it for a test to look at and clean up what its gateways wrote. */
export async function connectRedis(): Promise<Redis> {
  const redis = new Redis({ ...REDIS, lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
  return redis;
}

/** Deletes the keys matching `pattern` (a run's rate-limit namespace), so runs leave nothing behind. */
export async function deleteKeys(redis: Redis, pattern: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 500);
    if (keys.length > 0) await redis.del(...keys);
    cursor = next;
  } while (cursor !== '0');
}
