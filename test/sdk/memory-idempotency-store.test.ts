import { MemoryIdempotencyStore } from '../../sdk';
import { conformance } from './store-conformance';

describe('idempotency stores', () => {
  describe('MemoryIdempotencyStore', () => {
    conformance(() => {
      let now = 1_000_000;
      return {
        store: new MemoryIdempotencyStore(() => now),
        leaseMs: 200,
        ttlMs: 400,
        advance: async (ms) => {
          now += ms;
        },
      };
    });
  });
});
