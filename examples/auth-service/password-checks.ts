import { ServiceError } from '../../sdk';

/**
 * Logins in progress at once by default. bcryptjs hashes on the event loop (its async form only cuts the work into
 * slices), so more cores add no throughput: every login beyond this would only slow the ones already running.
 * At 4, a login waits for at most three others' hashes (about 0.3 s at cost 10).
 */
export const DEFAULT_MAX_CONCURRENT_PASSWORD_CHECKS = 4;

const ENV = 'MAX_CONCURRENT_PASSWORD_CHECKS';

/** The bound from MAX_CONCURRENT_PASSWORD_CHECKS (1–1000); anything else stops the start. */
export function passwordCheckBoundFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env[ENV]?.trim();
  if (raw === undefined || raw === '') return DEFAULT_MAX_CONCURRENT_PASSWORD_CHECKS;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n < 1 || n > 1000) throw new Error(`${ENV} must be a whole number from 1 to 1000`);
  return n;
}

/**
 * Lets at most `max` calls of `handle` run at once; one more is refused at once with 503 SERVICE_UNAVAILABLE and
 * `retryAfter`, before it costs a database query or a hash. Waiting instead would let a flood of logins queue up
 * hashes for minutes, and every caller's login, the owner's too, would wait behind them.
 */
export function boundedConcurrency<I, C, R>(
  max: number,
  handle: (input: I, ctx: C) => Promise<R>,
): (input: I, ctx: C) => Promise<R> {
  let running = 0;
  return async (input, ctx) => {
    if (running >= max)
      throw new ServiceError('SERVICE_UNAVAILABLE', 'Too many logins at once; try again shortly', {
        status: 503,
        retryAfter: 1,
      });
    running += 1;
    try {
      return await handle(input, ctx);
    } finally {
      running -= 1;
    }
  };
}
