import type { ChannelModel } from 'amqplib';
import type { Announcement } from '../../contracts/types';
import { consoleLogger, type Logger } from '../../logger';
import type {
  AnnouncementListener,
  Reply,
  RequestHandler,
  RequestMessage,
  Subscription,
  Transport,
  TransportState,
  WorkQueueOptions,
} from '../transport';
import { AmqpConnection } from './connection';
import { AmqpConsumers } from './consumers';
import { AmqpListeners, type AnnouncementIntake } from './listeners';
import { AmqpPublisher, type ReplyCheck } from './publisher';
import { AmqpWorkQueues } from './work-queue';
import { BusNames, type WorkQueueType } from './wire';

/*
 * The AMQP 0-9-1 transport (RabbitMQ, amqplib), composed of:
 *   connection.ts   the connection, its recovery and the transport's state; the exchanges
 *   publisher.ts    gateway side: requests, their replies and deadlines, confirmed publishes
 *   consumers.ts    channels and consumers that live across reconnects; the topology keeper
 *   work-queue.ts   service side: the work queue consumer (reply, then ack)
 *   listeners.ts    announcement intake and discovery requests
 *   wire.ts         the wire format: names, properties, headers
 */

export interface AmqpTransportOptions {
  /** Prefix of every exchange and queue name, so several deployments (or test runs) can share a broker. */
  prefix: string;
  logger?: Logger;
  /** How long start() waits for the first connection before it gives up. Default 10 s. */
  connectTimeoutMs?: number;
  /** Reconnect backoff: first delay (default 100 ms, jittered ±20%) and cap (default 5 s). */
  reconnect?: { initialDelayMs?: number; maxDelayMs?: number };
  /** Gateway side: bounds on the announcements it takes off the bus. */
  announcements?: Partial<AnnouncementIntake>;
  /** Gateway side: whose replies it takes for a service (by default anyone's). */
  replies?: ReplyCheck;
  /** Service side: classic work queues (the default) or quorum ones, replicated over a cluster (BUS_QUEUE_TYPE). */
  queueType?: WorkQueueType;
}

export class AmqpTransport implements Transport {
  readonly kind = 'amqp' as const;
  readonly brokerUser: string | undefined;
  private readonly conn: AmqpConnection;
  private readonly publisher: AmqpPublisher;
  private readonly consumers: AmqpConsumers;
  private readonly workQueues: AmqpWorkQueues;
  private readonly listeners: AmqpListeners;
  private readonly names: BusNames;
  private closing: Promise<void> | null = null;

  constructor(url: string, opts: AmqpTransportOptions) {
    if (!opts || typeof opts.prefix !== 'string' || opts.prefix === '')
      throw new Error('AmqpTransport needs a non-empty prefix');
    this.names = new BusNames(opts.prefix);
    this.conn = new AmqpConnection(
      url,
      {
        names: this.names,
        logger: opts.logger ?? consoleLogger,
        connectTimeoutMs: opts.connectTimeoutMs,
        reconnect: opts.reconnect,
      },
      { setup: (model) => this.setup(model), lost: (model) => this.lost(model) },
    );
    this.brokerUser = this.conn.brokerUser;
    this.consumers = new AmqpConsumers(this.conn);
    this.publisher = new AmqpPublisher(this.conn, this.consumers, opts.replies);
    this.workQueues = new AmqpWorkQueues(this.conn, this.consumers, opts.queueType);
    this.listeners = new AmqpListeners(this.conn, this.consumers, opts.announcements);
  }

  get requestExchange(): string {
    return this.names.requestExchange;
  }

  /** The name of the work queue of `service`. */
  serviceQueue(service: string): string {
    return this.names.serviceQueue(service);
  }

  state(): TransportState {
    return this.conn.state();
  }

  onStateChange(listener: (state: TransportState) => void): void {
    this.conn.onStateChange(listener);
  }

  node(): string | undefined {
    return this.conn.node();
  }

  blockedReason(): string | undefined {
    return this.conn.blockedReason();
  }

  start(): Promise<void> {
    return this.conn.start();
  }

  /** Every new connection: every channel, the publisher's first (they were registered first). */
  private async setup(model: ChannelModel): Promise<void> {
    await this.consumers.connected(model);
  }

  private lost(model: ChannelModel): void {
    this.publisher.lost();
    this.consumers.lost(model);
  }

  close(): Promise<void> {
    if (!this.closing) this.closing = this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    this.conn.beginClose();
    this.publisher.stop();
    await this.consumers.closeAll();
    await this.conn.end();
  }

  // gateway side
  request(message: RequestMessage, timeoutMs: number): Promise<Reply> {
    return this.publisher.request(message, timeoutMs);
  }

  abortPending(error: () => Error): void {
    this.publisher.abortPending(error);
  }

  onAnnouncement(listener: AnnouncementListener): Promise<Subscription> {
    return this.listeners.onAnnouncement(listener);
  }

  /** Deaf too while the broker confirms none of the gateway's requests: the services' renewals stall with them. */
  announcementsUnheard(): string | undefined {
    return (
      this.listeners.unheardReason() ??
      (this.publisher.impaired() ? "the broker has confirmed none of the gateway's messages for seconds" : undefined)
    );
  }

  refusedChannels(): string[] {
    return this.consumers.refused();
  }

  requestDiscovery(): Promise<void> {
    return this.publisher.requestDiscovery();
  }

  // service side
  serve(service: string, handler: RequestHandler, opts: WorkQueueOptions = {}): Promise<Subscription> {
    return this.workQueues.serve(service, handler, opts);
  }

  announce(announcement: Announcement): Promise<void> {
    return this.publisher.announce(announcement);
  }

  onDiscoveryRequest(listener: () => void): Promise<Subscription> {
    return this.listeners.onDiscoveryRequest(listener);
  }
}
