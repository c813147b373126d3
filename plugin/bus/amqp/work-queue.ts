import type { Channel, ConsumeMessage } from 'amqplib';
import { describeError } from '../../errors/describe';
import { DEFAULT_PREFETCH } from '../constants';
import { invokeHandler, replyJson } from '../handler';
import type { Reply, RequestHandler, WorkQueueOptions, Subscription } from '../transport';
import type { AmqpConnection } from './connection';
import { noop } from '../../logger';
import { inert, OnceLog } from '../../log-once';
import type { AmqpConsumers, Registration } from './consumers';
import { ensureExchange } from './service-exchanges';
import {
  ACCESS_REFUSED,
  decodeRequest,
  JSON_TYPE,
  PRECONDITION_FAILED,
  traceIdOf,
  workQueueOptions,
  type WorkQueueType,
} from './wire';

/*
 * The service side of the AMQP transport: a competing consumer on the service's work queue that runs the handler,
 * replies to the request's replyTo on the reply exchange (stamped with this connection's broker user, which the gateway checks), and acks
 * the request only after replying (so what an instance held when it died is redelivered).
 */

type WorkQueueFound = 'declared' | 'other' | 'given';

const MALFORMED_REQUEST_REPLY: Reply = {
  ok: false,
  error: { code: 'BAD_REQUEST', message: 'Malformed request message' },
};

export class AmqpWorkQueues {
  /** Requests refused for their publisher: one line per service and publisher per minute. */
  private readonly refusedLog: OnceLog;

  constructor(
    private readonly conn: AmqpConnection,
    private readonly consumers: AmqpConsumers,
    private readonly queueType: WorkQueueType = 'classic',
  ) {
    this.refusedLog = new OnceLog(conn.logger);
  }

  serve(service: string, handler: RequestHandler, opts: WorkQueueOptions = {}): Promise<Subscription> {
    const queue = this.conn.names.serviceQueue(service);
    const requestExchange = this.conn.names.requestExchange;
    const from = opts.acceptRequestsFrom;
    // How the work queue was found: declared as this instance declares it, with other arguments, or given by the
    // broker definitions (this user may not declare it, nor delete it).
    let found: WorkQueueFound = 'declared';
    const reg = this.consumers.create(`consumer of ${queue}`, {
      prefetch: Math.max(1, opts.prefetch ?? DEFAULT_PREFETCH),
      attach: async (ch) => {
        await this.conn.declareExchanges(ch);
        const model = reg.model;
        // Replies go to the service's own exchange: declared here where this user may, else the definitions' one.
        if (!model || !(await ensureExchange(model, this.conn.names.serviceReplyExchange(service))))
          throw new Error(`the exchange ${this.conn.names.serviceReplyExchange(service)} is missing`);
        // A queue found with other arguments may be of the other type: its deletion then counts consumers.
        found = await this.declareWorkQueue(ch, reg, queue);
        await ch.bindQueue(queue, requestExchange, service);
        const { consumerTag } = await ch.consume(
          queue,
          (msg) => {
            if (msg !== null && from !== undefined && msg.properties.userId !== from)
              return this.refuse(ch, service, from, msg);
            this.onWork(reg, ch, service, handler, msg);
          },
          { noAck: false },
        );
        return consumerTag;
      },
      rebind: (ch) => ch.bindQueue(queue, requestExchange, service),
      // The last instance to stop deletes the queue (only if no other instance consumes), so the service is
      // unroutable — 503 — as soon as close() resolves rather than when the queue expires.
      detach: async (ch) => {
        if (found !== 'given') await this.deleteIfUnused(ch, queue, found === 'declared' ? this.queueType : 'quorum');
      },
    });
    return this.consumers.register(reg);
  }

  /**
   * Deletes the work queue when no instance consumes it any more. RabbitMQ refuses `if-unused` on a quorum queue (it
   * closes the whole connection), so there, and on a queue of unknown type, the consumers are counted first; an
   * instance that starts in between sees its consumer cancelled and declares the queue again (brokerCancelled).
   */
  private async deleteIfUnused(ch: Channel, queue: string, type: WorkQueueType): Promise<void> {
    if (type === 'classic') {
      await ch.deleteQueue(queue, { ifUnused: true });
      return;
    }
    const { consumerCount } = await ch.checkQueue(queue);
    if (consumerCount === 0) await ch.deleteQueue(queue);
  }

  /**
   * Declares the work queue (workQueueOptions: classic or quorum); false when it exists with other arguments. Such a
   * queue — declared by an instance of an older version (auto-delete) during a rolling upgrade, or by one with
   * another BUS_QUEUE_TYPE — closes the declaring channel with PRECONDITION_FAILED; the declaration is tried on a
   * channel of its own so that this instance can still consume the existing queue as it is.
   */
  private async declareWorkQueue(ch: Channel, reg: Registration, queue: string): Promise<WorkQueueFound> {
    const model = reg.model;
    if (!model) throw new Error('The connection was lost');
    const probe = await model.createChannel();
    probe.on('error', noop);
    try {
      await probe.assertQueue(queue, workQueueOptions(this.queueType));
      return 'declared';
    } catch (err) {
      // A per-service broker user may not declare its work queue (the definitions do, with fixed arguments): it
      // consumes the queue as it is (a passive declare needs no configure permission).
      if ((err as { code?: unknown }).code === ACCESS_REFUSED) {
        await ch.checkQueue(queue);
        return 'given';
      }
      if ((err as { code?: unknown }).code !== PRECONDITION_FAILED) throw err;
      await ch.checkQueue(queue);
      this.conn.logger.warn(
        `bus: ${queue} exists with other arguments (an older instance, or one with another BUS_QUEUE_TYPE, declared it); consuming it as it is`,
      );
      return 'other';
    } finally {
      await probe.close().catch(noop);
    }
  }

  /**
   * A request some other broker user published (straight to the queue, through the default exchange): acked and
   * dropped unanswered, so it never reaches a handler and the service sends nothing where the sender pointed.
   */
  private refuse(ch: Channel, service: string, from: string, msg: ConsumeMessage): void {
    const publisher = typeof msg.properties.userId === 'string' ? msg.properties.userId : undefined;
    const who = publisher === undefined ? 'no broker user (user_id)' : `broker user ${inert(publisher)}`;
    this.refusedLog.warn(
      JSON.stringify([service, publisher]),
      `bus: dropped a request to ${service} published by ${who}: requests are accepted from ${from} only`,
    );
    try {
      ch.ack(msg);
    } catch {
      // the channel closed meanwhile; the broker requeues it, and it is refused again
    }
  }

  private onWork(
    reg: Registration,
    ch: Channel,
    service: string,
    handler: RequestHandler,
    msg: ConsumeMessage | null,
  ): void {
    if (msg === null) {
      this.consumers.brokerCancelled(reg, ch);
      return;
    }
    const replyExchange = this.conn.names.serviceReplyExchange(service);
    // A redelivery of a request this instance is running (or ran) on a channel that died gets that run's reply.
    const reply = (msg.fields.redelivered && reg.orphans.take(msg)) || this.replyBody(msg, service, handler);
    const id = msg.properties.correlationId as string | undefined;
    if (id !== undefined) reg.running.set(id, { type: msg.properties.type, content: msg.content, reply });
    const work = reply.then((body) => {
      // Only this delivery's entry: after a reconnect the same id may be running again as its redelivery.
      if (id !== undefined && reg.running.get(id)?.reply === reply && reg.ch === ch) reg.running.delete(id);
      try {
        const replyTo = msg.properties.replyTo as string | undefined;
        // Through the service's own reply exchange, never the default one (which reaches every queue) nor a shared one.
        if (replyTo) {
          ch.publish(replyExchange, replyTo, body, {
            correlationId: msg.properties.correlationId,
            contentType: JSON_TYPE,
            userId: this.conn.brokerUser,
          });
        }
        ch.ack(msg);
      } catch (err) {
        // The channel went away while the handler ran; the broker redelivers the request (see OrphanedReplies).
        this.conn.logger.warn(
          `[${traceIdOf(msg)}] bus: could not reply to ${service}/${msg.properties.type}: ${describeError(err)}`,
        );
      }
    });
    reg.inflight.add(work);
    void work.finally(() => reg.inflight.delete(work));
  }

  /** Runs the handler; settles with the reply as the JSON body to send. */
  private async replyBody(msg: ConsumeMessage, service: string, handler: RequestHandler): Promise<Buffer> {
    const request = decodeRequest(msg, service);
    const reply: Reply = request ? await invokeHandler(handler, request, this.conn.logger) : MALFORMED_REQUEST_REPLY;
    return Buffer.from(replyJson(reply, this.conn.logger, traceIdOf, msg, service, msg.properties.type), 'utf8');
  }
}
