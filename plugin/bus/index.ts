import { AmqpTransport } from './amqp';
import { workQueueTypeOf, type WorkQueueType } from './amqp/wire';
import type { AnnouncementIntake } from './amqp/listeners';
import type { ReplyCheck } from './amqp/publisher';
import { InProcessTransport } from './inprocess';
import { defaultHub } from './inprocess/hub';
import type { Transport } from './transport';
import type { Logger } from '../logger';

export interface TransportConfig {
  /**
   * BUS_URL: `amqp://…`, `amqps://…`, or `embedded` for the in-process bus (a service in the gateway's own process).
   * Required: a service that forgot BUS_URL would otherwise serve an in-process bus nobody else can reach.
   */
  url?: string | undefined;
  /** Prefix of every exchange and queue name on the broker (AMQP only). Default `contracts`. */
  prefix?: string | undefined;
  logger?: Logger;
  /** Gateway side: bounds on the announcements taken off the bus (AMQP only). */
  announcements?: Partial<AnnouncementIntake>;
  /** Gateway side: whose replies are taken for a service (AMQP only). */
  replies?: ReplyCheck;
  /** Service side, AMQP: classic or quorum work queues. Unset: env BUS_QUEUE_TYPE, else classic. */
  queueType?: WorkQueueType;
}

export const DEFAULT_BUS_PREFIX = 'contracts';

/** Picks the transport for a BUS_URL. Does not start it. No URL is an error: `embedded` must be asked for by name. */
export function createTransport(config: TransportConfig): Transport {
  const url = (config.url ?? '').trim();
  if (url === '')
    throw new Error(
      "no bus URL: set BUS_URL to amqp://user:pass@host:5672 (or to embedded for a service in the gateway's own process)",
    );
  if (url === 'embedded') return new InProcessTransport(defaultHub(), { logger: config.logger });
  if (/^amqps?:\/\//i.test(url)) {
    const queueType = config.queueType ?? workQueueTypeOf(process.env.BUS_QUEUE_TYPE);
    return new AmqpTransport(url, {
      prefix: config.prefix || DEFAULT_BUS_PREFIX,
      logger: config.logger,
      announcements: config.announcements,
      replies: config.replies,
      queueType,
    });
  }
  throw new Error('BUS_URL must be amqp://, amqps:// or embedded');
}
