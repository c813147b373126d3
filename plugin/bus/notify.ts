import { describeError } from '../errors/describe';
import type { Logger } from '../logger';
import type { TransportState } from './transport';

/** Runs a listener of the application's; one that throws is logged as `what` failing and the bus carries on. */
export function callGuarded(logger: Logger, what: string, call: () => void): void {
  try {
    call();
  } catch (err) {
    logger.error(`bus: ${what} failed: ${describeError(err)}`);
  }
}

/** Tells every state listener (those added meanwhile wait for the next change). */
export function notifyState(
  listeners: ReadonlyArray<(state: TransportState) => void>,
  state: TransportState,
  logger: Logger,
): void {
  for (const listener of [...listeners]) callGuarded(logger, 'state listener', () => listener(state));
}
