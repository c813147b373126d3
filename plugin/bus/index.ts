import { AmqpTransport, type AnnouncementIntake, type ReplyCheck } from './amqp';
import { InProcessTransport, defaultHub } from './inprocess';
import type { Transport } from './transport';
import type { BusLogger } from './logger';

export type {
  MessageHeaders,
  MessageUser,
  Reply,
  ReplyError,
  RequestHandler,
  RequestMessage,
  Subscription,
  Transport,
  TransportState,
  WorkQueueOptions,
  AnnouncementListener,
  AnnouncementOrigin,
} from './transport';
export { AmqpTransport } from './amqp';
export type { AmqpTransportOptions, AnnouncementIntake, ReplyCheck } from './amqp';
export { InProcessHub, InProcessTransport, defaultHub } from './inprocess';
export type { BusLogger } from './logger';

export interface TransportConfig {
  /** BUS_URL: `amqp://…`, `amqps://…`, or `embedded` / empty for the in-process bus. */
  url?: string;
  /** Prefix of every exchange and queue name on the broker (AMQP only). Default `contracts`. */
  prefix?: string;
  logger?: BusLogger;
  /** Gateway side: bounds on the announcements taken off the bus (AMQP only). */
  announcements?: Partial<AnnouncementIntake>;
  /** Gateway side: whose replies are taken for a service (AMQP only). */
  replies?: ReplyCheck;
}

export const DEFAULT_BUS_PREFIX = 'contracts';

/** Picks the transport for a BUS_URL. Does not start it. */
export function createTransport(config: TransportConfig): Transport {
  const url = (config.url ?? '').trim();
  if (url === '' || url === 'embedded') return new InProcessTransport(defaultHub(), { logger: config.logger });
  if (/^amqps?:\/\//i.test(url)) {
    return new AmqpTransport(url, { prefix: config.prefix || DEFAULT_BUS_PREFIX, logger: config.logger, announcements: config.announcements, replies: config.replies });
  }
  throw new Error('BUS_URL must be amqp://, amqps:// or embedded');
}
