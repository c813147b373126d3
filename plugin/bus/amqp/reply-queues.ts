import { randomUUID } from 'node:crypto';
import type { Channel, ChannelModel, ConsumeMessage } from 'amqplib';
import { describeError } from '../../errors/describe';
import { inert, OnceLog } from '../../log-once';
import type { AmqpConnection } from './connection';
import { readyChannel, type AmqpConsumers, type Registration } from './consumers';
import { bindIfAllowed } from './service-exchanges';
import { REPLY_QUEUE_OPTIONS } from './wire';

/*
 * The gateway's reply queues: one per target service and connection, `P.reply.<uuid>.<service>`, bound to the reply
 * exchange with its own name as key (the only key that service's broker user may publish there). Each is bounded
 * and consumed on a channel of its own with a prefetch and manual acks, so one service flooding its own replies
 * fills only its own queue (the broker drops the oldest) and holds at most a prefetch of messages in the gateway,
 * while every other service's replies keep coming on their own consumers.
 */

/** Replies of one service in the gateway's hands at once (its consumer's prefetch). */
const REPLY_PREFETCH = 128;

/** Told of every reply off a reply queue, with the service whose queue it came on. */
export type ReplySink = (service: string, msg: ConsumeMessage) => void;

interface ReplyQueue {
  reg: Registration;
  /** The queue of the current connection (exclusive: it goes with the connection). */
  name: string | null;
  model: ChannelModel | null;
  /** The latest delivery not yet acked, and whether an ack of it and all before it is scheduled. */
  unacked: ConsumeMessage | null;
  ackScheduled: boolean;
  registering: Promise<unknown> | null;
  /** Whether the queue is bound to the service's own reply exchange (false under definitions from before it). */
  bound: boolean;
}

export class ReplyQueues {
  private readonly byService = new Map<string, ReplyQueue>();
  /** Reply queue failures: one line a minute per service, whatever the request rate. */
  private readonly failedLog: OnceLog;

  constructor(
    private readonly conn: AmqpConnection,
    private readonly consumers: AmqpConsumers,
    private readonly sink: ReplySink,
    private readonly cancelled: (service: string) => void,
  ) {
    this.failedLog = new OnceLog(conn.logger);
  }

  /** The replyTo of a request to `service` while its reply queue is consumed; undefined until then. */
  replyTo(service: string): string | undefined {
    const q = this.byService.get(service);
    return q !== undefined && readyChannel(q.reg) !== undefined ? (q.name ?? undefined) : undefined;
  }

  /** Opens the reply queue of `service` (once; again after it failed to open). */
  open(service: string): Promise<unknown> {
    const known = this.byService.get(service);
    if (known?.registering) return known.registering;
    const q: ReplyQueue = {
      reg: undefined as unknown as Registration,
      name: null,
      model: null,
      unacked: null,
      ackScheduled: false,
      registering: null,
      bound: false,
    };
    q.reg = this.consumers.create(`reply consumer of ${service}`, {
      prefetch: REPLY_PREFETCH,
      attach: (ch) => this.attach(service, q, ch),
      rebind: async (ch) => {
        if (q.name === null) return;
        await ch.bindQueue(q.name, this.conn.names.replyExchange, q.name);
        if (!q.bound) return;
        const exchange = this.conn.names.serviceReplyExchange(service);
        await ch.assertExchange(exchange, 'topic', { durable: true });
        await ch.bindQueue(q.name, exchange, q.name);
      },
    });
    this.byService.set(service, q);
    const registering = this.consumers.register(q.reg).catch((err: unknown) => {
      // Every request retries it: one line a minute (e.g. definitions without P.reply.* or P.replies).
      this.failedLog.warn(
        `reply queue ${service}`,
        `bus: could not open the reply queue for ${inert(service)}: ${describeError(err)}`,
      );
      if (this.byService.get(service) === q) this.byService.delete(service);
    });
    q.registering = registering;
    return registering;
  }

  /** The connection is gone, and with it every reply queue: the next connection declares new ones. */
  lost(): void {
    for (const q of this.byService.values()) q.name = null;
  }

  private async attach(service: string, q: ReplyQueue, ch: Channel): Promise<string> {
    const model = q.reg.model;
    if (!model) throw new Error('The connection was lost');
    if (q.model !== model || q.name === null) {
      q.model = model;
      q.name = this.conn.names.replyQueue(randomUUID(), service);
    }
    const queue = q.name;
    q.unacked = null;
    q.ackScheduled = false;
    // Exclusive, not auto-delete: it outlives this channel (a re-opened consumer finds the replies sent meanwhile)
    // and goes with the connection.
    await ch.assertQueue(queue, REPLY_QUEUE_OPTIONS);
    await ch.bindQueue(queue, this.conn.names.replyExchange, queue);
    // The service's own reply exchange, which only it writes; P.replies stays for services from before it.
    q.bound = await bindIfAllowed(model, queue, this.conn.names.serviceReplyExchange(service), queue);
    const { consumerTag } = await ch.consume(
      queue,
      (msg) => (msg === null ? this.onCancelled(service, q, ch) : this.onMessage(service, q, ch, msg)),
      { noAck: false },
    );
    return consumerTag;
  }

  private onMessage(service: string, q: ReplyQueue, ch: Channel, msg: ConsumeMessage): void {
    // One ack (of everything so far) per turn of the event loop rather than one per reply.
    q.unacked = msg;
    if (!q.ackScheduled) {
      q.ackScheduled = true;
      setImmediate(flushAck, q, ch);
    }
    this.sink(service, msg);
  }

  /** The queue was deleted: the replies on their way to it are lost, and the consumer re-opens with a new one. */
  private onCancelled(service: string, q: ReplyQueue, ch: Channel): void {
    q.name = null;
    this.cancelled(service);
    this.consumers.brokerCancelled(q.reg, ch);
  }
}

function flushAck(q: ReplyQueue, ch: Channel): void {
  q.ackScheduled = false;
  const msg = q.unacked;
  q.unacked = null;
  if (msg === null || q.reg.ch !== ch) return;
  try {
    ch.ack(msg, true);
  } catch {
    // the channel closed meanwhile: the broker requeues what was unacked, and the consumer re-opens
  }
}
