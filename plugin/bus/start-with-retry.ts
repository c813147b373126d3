import type { Transport } from './transport';
import type { Logger } from '../logger';
import { RETRY_MAX_DELAY_MS } from './constants';
import { errorMessage } from '../errors/describe';

const FIRST_DELAY_MS = 250;

/**
 * Starts a transport, and when the bus is not reachable (broker down, wrong credentials) tries again with a
 * growing pause until it is, or until `stopped()` says the process is ending. Never rejects: true once started,
 * false when stopped first. One log line per failed attempt (an AMQP attempt already retries for its connect
 * timeout), so a broker that stays away costs a line every ten seconds or so, not a screenful.
 */
export async function startWithRetry(
  transport: Pick<Transport, 'start'>,
  log: Pick<Logger, 'warn'>,
  stopped: () => boolean,
): Promise<boolean> {
  for (let delay = FIRST_DELAY_MS; !stopped(); delay = Math.min(delay * 2, RETRY_MAX_DELAY_MS)) {
    try {
      await transport.start();
      return true;
    } catch (err) {
      if (stopped()) break;
      log.warn(
        `bus not reachable (${errorMessage(err)}); retrying in ${delay} ms, requests are answered 503 meanwhile`,
      );
      // Unref'd: a process that has nothing else to do (a stop in progress) is not held open by the retry.
      await new Promise((r) => setTimeout(r, delay).unref());
    }
  }
  return false;
}
