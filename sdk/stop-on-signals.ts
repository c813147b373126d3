import type { Transport } from '../plugin/bus/transport';
import type { RunningService } from './serve';

const DEFAULT_DRAIN_MS = 1000;

export interface StopOnSignalsOptions {
  /** Default SIGTERM and SIGINT. */
  signals?: NodeJS.Signals[];
  /** Keep serving this long after the withdrawal (requests the gateway routed before it saw it). Default 1000 ms. */
  drainMs?: number;
  /** Exit the process when stopped (default true; code 0, or 1 when stopping failed). */
  exit?: boolean;
  log?: (message: string) => void;
  /** Runs after the services have stopped and the bus is closed: what they used to the end (a database). */
  afterStop?: () => Promise<void>;
}

/**
 * The SIGTERM path of a service: withdraw its contracts (the gateway stops routing here at once), finish the
 * handlers in flight, close the bus connection, exit. Returns a function that removes the handlers.
 */
export function stopOnSignals(
  services: RunningService | RunningService[],
  transport?: Transport,
  opts: StopOnSignalsOptions = {},
): () => void {
  const list = Array.isArray(services) ? services : [services];
  const signals = opts.signals ?? ['SIGTERM', 'SIGINT'];
  const log = opts.log ?? ((m: string) => console.log(m));
  let stopping = false;
  const handler = (signal: NodeJS.Signals): void => {
    if (stopping) return;
    stopping = true;
    log(`${signal}: withdrawing ${list.map((s) => s.service).join(', ')} and stopping`);
    void (async () => {
      let failed = false;
      await Promise.all(
        list.map((s) => s.stop({ drainMs: opts.drainMs ?? DEFAULT_DRAIN_MS }).catch(() => (failed = true))),
      );
      await transport?.close().catch(() => (failed = true));
      await opts.afterStop?.().catch(() => (failed = true));
      if (opts.exit !== false) process.exit(failed ? 1 : 0);
    })();
  };
  for (const s of signals) process.on(s, handler);
  return () => {
    for (const s of signals) process.off(s, handler);
  };
}
