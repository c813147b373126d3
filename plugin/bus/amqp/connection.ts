// First: it wraps amqplib's field-table decoder, which amqplib takes when it loads.
import { headerGuardInstalled } from './header-guard';
import * as amqp from 'amqplib';
import type { Channel, ChannelModel, RecoveringChannelModel } from 'amqplib';
import { describeError } from '../../errors/describe';
import { RETRY_FIRST_DELAY_MS, RETRY_MAX_DELAY_MS } from '../constants';
import { noop, type Logger } from '../../logger';
import { notifyState } from '../notify';
import type { TransportState } from '../transport';
import { BrokerList, brokerListUser } from './broker-list';
import { dropWhenSilent } from './liveness';
import type { BusNames } from './wire';

/*
 * The connection to the broker and its recovery, shared by the gateway side (publisher.ts) and the service side
 * (consumers.ts): amqplib reconnects with backoff and runs `setup` on every new connection; the transport's state
 * follows the connection. The exchanges are declared here, once per connection.
 */

const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
/** One connection attempt's socket timeout; start() keeps attempting until its own bound. */
const CONNECT_ATTEMPT_TIMEOUT_MS = 5_000;

/** What the sides do when a connection comes up (before it counts as up) and when it is lost. */
export interface ConnectionHooks {
  /** Opens the sides' channels on a new connection; throwing makes amqplib drop it and retry. */
  setup(model: ChannelModel): Promise<void>;
  lost(model: ChannelModel): void;
}

export interface ConnectionOptions {
  names: BusNames;
  logger: Logger;
  connectTimeoutMs?: number;
  reconnect?: { initialDelayMs?: number; maxDelayMs?: number };
}

/** The user an amqp:// URL logs in as: amqplib logs in as guest when the URL names neither user nor password. */
export function urlUser(url: string): string | undefined {
  const user = brokerListUser(url);
  return user === '' ? undefined : user;
}

/** The pause before the next attempt to re-create a channel the broker closed while the connection stayed up. */
export function channelRetryDelay(failures: number): number {
  return Math.min(RETRY_MAX_DELAY_MS, RETRY_FIRST_DELAY_MS * 2 ** failures);
}

export class AmqpConnection {
  readonly logger: Logger;
  readonly names: BusNames;
  /** The broker user of the URL, stamped as `user_id` on what this transport publishes (RabbitMQ checks it). */
  readonly brokerUser: string | undefined;
  private current: TransportState = 'connecting';
  private readonly stateListeners: Array<(state: TransportState) => void> = [];
  private readonly connectTimeoutMs: number;
  private readonly initialDelayMs: number;
  private readonly maxDelayMs: number;
  private recovering: RecoveringChannelModel | null = null;
  /** The live connection; null while down. */
  private live: ChannelModel | null = null;
  private starting: Promise<void> | null = null;
  private isClosing = false;
  private lastConnectError: Error | null = null;
  /** Whether a connect failure was logged since the last successful connection. */
  private connectFailureLogged = false;
  /** The connection whose broker user may not declare the exchanges (checked to exist by ensureExchanges). */
  private exchangesGivenOn: ChannelModel | null = null;
  /** Why the broker blocks the live connection (connection.blocked's reason); undefined while it does not. */
  private blockedBy: string | undefined;
  /** The nodes of BUS_URL and the one in use; it moves on after every failed attempt and every lost connection. */
  private readonly brokers: BrokerList;

  constructor(
    url: string,
    opts: ConnectionOptions,
    private readonly hooks: ConnectionHooks,
  ) {
    this.brokers = new BrokerList(url);
    this.names = opts.names;
    this.logger = opts.logger;
    this.connectTimeoutMs = opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    this.initialDelayMs = opts.reconnect?.initialDelayMs ?? RETRY_FIRST_DELAY_MS;
    this.maxDelayMs = opts.reconnect?.maxDelayMs ?? RETRY_MAX_DELAY_MS;
    this.brokerUser = urlUser(url);
    if (!headerGuardInstalled) {
      this.logger.warn(
        "bus: could not guard amqplib's header decoder (amqplib was loaded before the transport): a message with deeply nested headers can close this connection",
      );
    }
  }

  /** The node (`host:port`) of the live connection; undefined while down. */
  node(): string | undefined {
    return this.live ? this.brokers.current.node : undefined;
  }

  /** The live connection; null while down. */
  get model(): ChannelModel | null {
    return this.live;
  }

  /** Set once close() has begun: nothing is (re)opened from then on. */
  get closing(): boolean {
    return this.isClosing;
  }

  state(): TransportState {
    return this.current;
  }

  /** The alarm RabbitMQ names while it blocks the connection (`low on memory`, `low on disk space`). */
  blockedReason(): string | undefined {
    return this.current === 'blocked' ? this.blockedBy : undefined;
  }

  onStateChange(listener: (state: TransportState) => void): void {
    this.stateListeners.push(listener);
  }

  private setState(next: TransportState, why?: string): void {
    if (this.current === next || this.current === 'closed') return;
    this.current = next;
    if (why === undefined) this.logger.info(`bus: ${next}`);
    else this.logger.warn(`bus: ${next} (${why})`);
    notifyState(this.stateListeners, next, this.logger);
  }

  /** A driver message with the URLs' passwords taken out (belt and braces: amqplib does not echo them). */
  private scrub(message: string): string {
    return this.brokers.scrub(message);
  }

  start(): Promise<void> {
    if (this.isClosing) return Promise.reject(new Error('The transport is closed'));
    if (!this.starting) {
      this.starting = this.connectFirst();
      this.starting.catch(() => {
        this.starting = null; // a failed start may be retried
      });
    }
    return this.starting;
  }

  private async connectFirst(): Promise<void> {
    // amqplib's own recovery: it reconnects with jittered exponential backoff and runs `setup` on every
    // new connection before reporting it; we re-declare the topology and every consumer there.
    // amqplib reads the target's fields at every attempt: BrokerList re-fills them with the next node's.
    const recovering = await amqp.connect(this.brokers.target, {
      noDelay: true, // amqplib leaves Nagle on; replies would stall for ~40 ms
      timeout: Math.min(this.connectTimeoutMs, CONNECT_ATTEMPT_TIMEOUT_MS),
      recovery: {
        initialDelay: this.initialDelayMs,
        maxDelay: this.maxDelayMs,
        factor: 2,
        jitter: 0.2,
        waitForConnect: false,
        setup: (model: ChannelModel) => this.setup(model),
      },
    });
    if (this.isClosing) {
      await recovering.close().catch(noop);
      throw new Error('The transport was closed while connecting');
    }
    this.recovering = recovering;
    recovering.on('connect', () => {
      this.connectFailureLogged = false;
      if (this.brokers.addresses.length > 1) this.logger.info(`bus: connected to ${this.brokers.current.redacted}`);
      if (!this.isClosing) this.setState(this.blockedBy === undefined ? 'up' : 'blocked', this.blockedBy);
    });
    recovering.on('connect-failed', (err: Error) => {
      this.lastConnectError = err;
      const failed = this.brokers.current;
      this.brokers.advance();
      // amqplib retries every few hundred ms: the first failure is logged; later ones are summed up by the
      // caller's retry line (it names the last reason), not logged at every attempt.
      if (this.connectFailureLogged) return;
      this.connectFailureLogged = true;
      this.logger.warn(`bus: connecting to ${failed.redacted} failed: ${this.scrub(err.message)}`);
    });
    recovering.on('disconnect', (err: Error) => {
      const lost = this.brokers.current;
      this.brokers.advance();
      this.logger.warn(`bus: connection to ${lost.node} lost: ${this.scrub(err.message)}`);
    });
    recovering.on('reconnect-failed', (err: Error) =>
      this.logger.error(`bus: gave up reconnecting: ${this.scrub(err.message)}`),
    );
    recovering.on('error', (err: Error) => this.logger.warn(`bus: connection error: ${this.scrub(err.message)}`));
    recovering.on('handler-error', (err: Error) => this.logger.error(`bus: ${describeError(err)}`));

    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => {
        const cause = this.lastConnectError ? `: ${this.scrub(this.lastConnectError.message)}` : '';
        reject(
          new Error(
            `Could not connect to the message bus at ${this.brokers.describe()} within ${this.connectTimeoutMs} ms${cause}`,
          ),
        );
      }, this.connectTimeoutMs);
    });
    try {
      await Promise.race([recovering.waitForConnect(), timedOut]);
    } catch (err) {
      this.recovering = null;
      await recovering.close().catch(noop);
      if (!this.isClosing) this.setState('down');
      throw err instanceof Error && err.message.startsWith('Could not connect')
        ? err
        : new Error(`Could not connect to the message bus at ${this.brokers.describe()}`);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Runs on every new connection, before it counts as up. Throwing makes amqplib drop it and retry. */
  private async setup(model: ChannelModel): Promise<void> {
    model.on('error', (err: Error) => this.logger.warn(`bus: connection error: ${this.scrub(err.message)}`));
    if (this.isClosing) throw new Error('The transport is closing');
    model.once('close', () => this.onConnectionLost(model));
    // RabbitMQ blocks a publishing connection during a memory or disk alarm (amqplib announces the capability):
    // what it publishes then would wait in the socket, so the state says so and requests are refused at once.
    model.on('blocked', (reason: unknown) => this.onBlocked(model, typeof reason === 'string' ? reason : 'alarm'));
    model.on('unblocked', () => this.onBlocked(model, undefined));
    const node = this.brokers.current.node;
    dropWhenSilent(model, (ms) => this.logger.warn(`bus: no frame from ${node} for ${ms} ms: dropping the connection`));
    this.blockedBy = undefined;
    this.live = model;
    await this.ensureExchanges(model);
    await this.hooks.setup(model);
    if (this.live !== model) throw new Error('The connection was lost during setup');
  }

  private onConnectionLost(model: ChannelModel): void {
    if (this.live !== model) return;
    this.live = null;
    this.blockedBy = undefined;
    this.hooks.lost(model);
    if (!this.isClosing && (this.current === 'up' || this.current === 'blocked')) this.setState('down');
  }

  /** connection.blocked (`reason`: the broker's alarm) or connection.unblocked (undefined) on `model`. */
  private onBlocked(model: ChannelModel, reason: string | undefined): void {
    if (this.live !== model) return;
    this.blockedBy = reason;
    // During setup the connection is not up yet: the 'connect' handler picks the state.
    if (this.isClosing || this.current === 'connecting' || this.current === 'down') return;
    if (reason !== undefined) this.setState('blocked', `${this.brokers.current.node}: ${this.scrub(reason)}`);
    else this.setState('up');
  }

  /** The first step of close(): the state is `closed`, and nothing is opened again. */
  beginClose(): void {
    this.isClosing = true;
    this.setState('closed');
  }

  /** The last step of close(), once the sides have closed their channels. */
  async end(): Promise<void> {
    const recovering = this.recovering;
    this.recovering = null;
    if (recovering) await recovering.close().catch(noop);
    this.live = null;
  }

  /** Declares the exchanges on `ch`, unless this connection's broker user may only use them as they are. */
  async declareExchanges(ch: Channel): Promise<void> {
    if (this.exchangesGivenOn !== null && this.exchangesGivenOn === this.live) return;
    await this.assertExchanges(ch);
  }

  private async assertExchanges(ch: Channel): Promise<void> {
    await ch.assertExchange(this.names.requestExchange, 'topic', { durable: true });
    await ch.assertExchange(this.names.discoveryExchange, 'topic', { durable: true });
    await ch.assertExchange(this.names.replyExchange, 'topic', { durable: true });
  }

  /** Whether this connection's broker user may declare the exchanges (false for a per-service user). */
  get declaresExchanges(): boolean {
    return this.exchangesGivenOn === null || this.exchangesGivenOn !== this.live;
  }

  /**
   * Once per connection, on channels of its own: declares the exchanges, or, when the broker user may not (a
   * per-service user of docs/operations.md, whose exchanges come with the broker definitions), checks that they
   * are there; then the consumers' channels do not declare them on this connection.
   */
  private async ensureExchanges(model: ChannelModel): Promise<void> {
    const attempt = async (declare: boolean): Promise<void> => {
      const ch = await model.createChannel();
      ch.on('error', noop);
      try {
        if (declare) {
          await this.assertExchanges(ch);
        } else {
          await ch.checkExchange(this.names.requestExchange);
          await ch.checkExchange(this.names.discoveryExchange);
          await ch.checkExchange(this.names.replyExchange);
        }
      } finally {
        await ch.close().catch(noop);
      }
    };
    try {
      await attempt(true);
    } catch (err) {
      if (!/ACCESS.REFUSED/i.test(describeError(err))) throw err;
      await attempt(false);
      this.exchangesGivenOn = model;
    }
  }

  /** Logs a channel's errors and calls `onClose` when it closes (for whatever reason). */
  watchChannel(ch: Channel, label: string, onClose: () => void): void {
    ch.on('error', (err: Error) => {
      this.logger.warn(`bus: ${label} error: ${err.message}`);
    });
    ch.on('handler-error', (err: Error) => this.logger.error(`bus: ${label}: ${describeError(err)}`));
    ch.on('close', onClose);
  }
}
