import type { Server } from 'node:http';
import { HttpDrain, shuttingDown } from './http-drain';
import { currentRuntime } from '../runtime';
import { consoleLogger, type Logger } from '../logger';
import { errorMessage } from '../errors';

/** What the host's event bus (express-gateway lib/eventBus) offers; only what is used here. */
export interface HostEventBus {
  on(event: string, listener: (payload: { httpServer?: Server }) => void): unknown;
}

export const DEFAULT_SHUTDOWN_GRACE_MS = 10_000;
/** After the grace period: how long the last 503s get to be written before connections are cut. */
const FLUSH_MS = 1_000;

type Hook = () => Promise<void> | void;

/**
 * The graceful stop of the gateway process (SIGTERM, SIGINT), in the plugin so that it works under
 * `eg gateway start`, a plain `require('express-gateway')().load(dir).run()` and `npm start` alike:
 *   1. the host's servers stop accepting; requests arriving on open connections get 503 + Retry-After;
 *   2. requests in flight get up to the grace period to finish;
 *   3. what still waits (a bus reply, a proxied answer) is answered 503 + Retry-After;
 *   4. the hooks run (npm start stops its in-process reference services here), then the bus closes;
 *   5. the process exits 0. A second signal exits at once with 1.
 */
export class GracefulStop {
  private readonly drains: HttpDrain[] = [];
  private readonly hooks: Hook[] = [];
  private stopping?: Promise<void>;
  /** The rejecters of the bus waits in progress; each removes itself when its wait settles. */
  private readonly waits = new Set<(err: unknown) => void>();
  private aborted = false;
  private signalsInstalled = false;
  /** Set by the first init() that hooked the host's event bus. */
  attachedToHost = false;
  log: Logger = consoleLogger;

  /** Called for every server the host starts ('http-ready' / 'https-ready'). */
  addServer(server: Server): void {
    this.drains.push(new HttpDrain(server));
  }

  /** Runs during the stop, after the requests in flight, before the bus closes. */
  onStop(hook: Hook): void {
    this.hooks.push(hook);
  }

  /** Bus waits in progress (each settled wait is forgotten at once). */
  get pendingWaits(): number {
    return this.waits.size;
  }

  get isStopping(): boolean {
    return this.stopping !== undefined;
  }

  /**
   * `work` (a wait on the bus), or a 503 SERVICE_UNAVAILABLE with Retry-After once the grace period of a stop has
   * run out: the caller is answered instead of cut off when the process ends.
   */
  untilStopped<T>(work: Promise<T>): Promise<T> {
    if (this.aborted) return Promise.reject(shuttingDown());
    // Not Promise.race against one long-lived promise: every race would leave a reaction on it for good, and the
    // gateway's heap grew with every request (bench/REPORT.md). Each wait registers and unregisters itself instead.
    return new Promise<T>((resolve, reject) => {
      this.waits.add(reject);
      work.then(
        (value) => {
          this.waits.delete(reject);
          resolve(value);
        },
        (err: unknown) => {
          this.waits.delete(reject);
          reject(err);
        },
      );
    });
  }

  installSignalHandlers(graceMs: () => number): void {
    if (this.signalsInstalled) return;
    this.signalsInstalled = true;
    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      process.on(signal, () => {
        if (this.stopping) {
          this.log.warn(`${signal} again: exiting now`);
          process.exit(1);
        }
        this.log.info(`${signal}: stopping (grace period ${graceMs()} ms)`);
        this.stop(graceMs()).then(
          () => process.exit(0),
          (err) => {
            this.log.error(`stop failed: ${errorMessage(err)}`);
            process.exit(1);
          },
        );
      });
    }
  }

  stop(graceMs: number): Promise<void> {
    this.stopping ??= this.run(graceMs);
    return this.stopping;
  }

  private async run(graceMs: number): Promise<void> {
    for (const d of this.drains) d.begin();
    await Promise.all(this.drains.map((d) => d.idle(graceMs)));
    const left = this.drains.reduce((n, d) => n + d.inFlight, 0);
    if (left > 0) {
      this.log.warn(`grace period over: answering ${left} request(s) still in flight with 503`);
      // The contract-router's waits end first, so they answer with their own trace ids; the rest is answered here.
      this.aborted = true;
      for (const reject of this.waits) reject(shuttingDown());
      this.waits.clear();
      await new Promise((r) => setImmediate(r));
      for (const d of this.drains) d.refuseRemaining();
      await Promise.all(this.drains.map((d) => d.idle(FLUSH_MS)));
    }
    for (const hook of this.hooks) {
      await Promise.resolve()
        .then(hook)
        .catch((err) => this.log.warn(`stop hook failed: ${errorMessage(err)}`));
    }
    await currentRuntime()?.close();
    this.log.info('bus closed; stopped');
    for (const d of this.drains) d.closeConnections();
  }
}

const KEY = Symbol.for('express-gateway-plugin-contracts.graceful-stop');
type Holder = { [KEY]?: GracefulStop };

/** The process's graceful stop (one per process, like the runtime). */
export function gracefulStop(): GracefulStop {
  const g = globalThis as Holder;
  g[KEY] ??= new GracefulStop();
  return g[KEY];
}

/**
 * Hooks the graceful stop to the host: every server it starts is drained on SIGTERM/SIGINT. Idempotent, since
 * the host runs init() again on every reload.
 */
export function attachGracefulStop(eventBus: HostEventBus | undefined, graceMs: () => number, log: Logger): void {
  const stopper = gracefulStop();
  if (stopper.attachedToHost || !eventBus) return;
  stopper.attachedToHost = true;
  stopper.log = log;
  const onReady = ({ httpServer }: { httpServer?: Server }): void => {
    if (!httpServer) return;
    stopper.addServer(httpServer);
    stopper.installSignalHandlers(graceMs);
  };
  eventBus.on('http-ready', onReady);
  eventBus.on('https-ready', onReady);
}
