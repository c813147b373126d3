import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';

/** The broker the tests use: the real RabbitMQ of this machine unless BUS_URL says otherwise. */
export const AMQP_URL = process.env.TEST_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

/** The heap the image runs the gateway with (scripts/container/start.sh): the tests that bound memory use the same. */
export const IMAGE_NODE_OPTIONS = '--max-old-space-size=128 --max-semi-space-size=16';

/** Every run (and every gateway in it) gets its own exchange/queue prefix on the shared broker. */
export function uniquePrefix(label = 't'): string {
  return `test-${label}-${process.pid}-${randomBytes(4).toString('hex')}`;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (addr && typeof addr === 'object' ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}
