import { HttpDrain, shuttingDown } from './http-drain';
import { consoleLogger, type Logger } from '../logger';
import { errorMessage } from '../errors/describe';
import type { Transport } from '../bus/transport';
import type { HostPort, HostServer } from '../host/port';

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
  private aborted = false;
  private signalsInstalled = false;
  log: Logger = consoleLogger;

  /** Called for every server the host starts. */
  addServer(server: HostServer): void {
    this.drains.push(new HttpDrain(server));
  }

  /** Runs during the stop, after the requests in flight, before the bus closes. */
  onStop(hook: Hook): void {
    this.hooks.push(hook);
  }

  /**
   * transport: the bus whose waiting requests a stop answers when the grace period runs out; close: what ends the
   * bus and the rest of the runtime, last (the runtime that owns this stop passes its own).
   */
  constructor(
    private readonly transport: () => Pick<Transport, 'abortPending'> | undefined,
    private readonly close: () => Promise<void> = () => Promise.resolve(),
  ) {}

  get isStopping(): boolean {
    return this.stopping !== undefined;
  }

  /**
   * True once the grace period of a stop has run out: a request that reaches the bus now is answered 503 with
   * Retry-After at once (those already waiting were answered by the transport's abortPending).
   */
  get isAborted(): boolean {
    return this.aborted;
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
      // The contract-router's bus waits end first, so they answer with their own trace ids; the rest is answered here.
      // The transport fails them (not a promise wrapped around every request: that cost each request its closures).
      this.aborted = true;
      this.transport()?.abortPending(shuttingDown);
      await new Promise((r) => setImmediate(r));
      for (const d of this.drains) d.refuseRemaining();
      await Promise.all(this.drains.map((d) => d.idle(FLUSH_MS)));
    }
    for (const hook of this.hooks) {
      await Promise.resolve()
        .then(hook)
        .catch((err) => this.log.warn(`stop hook failed: ${errorMessage(err)}`));
    }
    await this.close();
    this.log.info('bus closed; stopped');
    for (const d of this.drains) d.closeConnections();
  }
}

/**
 * Hooks the graceful stop to the host: every server it starts is drained on SIGTERM/SIGINT. Called once per process
 * (by the first init()).
 */
export function attachGracefulStop(
  stopper: GracefulStop,
  host: Pick<HostPort, 'onServer'>,
  graceMs: () => number,
  log: Logger,
): void {
  stopper.log = log;
  host.onServer((server) => {
    stopper.addServer(server);
    stopper.installSignalHandlers(graceMs);
  });
}
