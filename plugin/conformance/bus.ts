import { randomUUID } from 'node:crypto';
import * as amqp from 'amqplib';
import type { Channel, ChannelModel, ConsumeMessage } from 'amqplib';
import { announceKey, BusNames, DISCOVER_KEY, encodeHeaders, encodeJson, JSON_TYPE } from '../bus/amqp/wire';
import { urlUser } from '../bus/amqp/connection';

/** A message the kit saw, with when it arrived. */
export interface Seen {
  at: number;
  msg: ConsumeMessage;
  body: unknown;
}

function parse(msg: ConsumeMessage): unknown {
  try {
    return JSON.parse(msg.content.toString('utf8'));
  } catch {
    return undefined;
  }
}

/** Resolves once `ready()` returns a value, or with undefined after `ms`. */
export async function within<T>(ms: number, ready: () => T | undefined): Promise<T | undefined> {
  const until = Date.now() + ms;
  for (;;) {
    const value = ready();
    if (value !== undefined || Date.now() >= until) return value;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * The kit's side of the bus, as the gateway has it: an exclusive queue for the service's announcements, one for
 * replies, and requests published to P.requests like the gateway's (docs/bus-protocol.md).
 */
export class ConformanceBus {
  readonly announcements: Seen[] = [];
  /** Every reply, by correlation_id: the one place replies are captured (where they arrive may change). */
  private readonly replies = new Map<string, Seen[]>();
  /** Requests that came back unroutable (mandatory, no queue bound), by correlation_id. */
  private readonly returned = new Set<string>();
  readonly replyQueue: string;
  readonly user: string;

  private constructor(
    private readonly model: ChannelModel,
    private readonly ch: Channel,
    readonly names: BusNames,
    readonly service: string,
    url: string,
  ) {
    this.replyQueue = names.replyQueue(randomUUID(), service);
    this.user = urlUser(url) ?? 'guest';
  }

  static async open(url: string, prefix: string, service: string): Promise<ConformanceBus> {
    const model = await amqp.connect(url, { noDelay: true });
    model.on('error', () => undefined);
    try {
      const ch = await model.createChannel();
      const bus = new ConformanceBus(model, ch, new BusNames(prefix), service, url);
      await bus.listen();
      return bus;
    } catch (err) {
      await model.close().catch(() => undefined);
      throw err;
    }
  }

  private async listen(): Promise<void> {
    const { ch, names } = this;
    ch.on('return', (msg: ConsumeMessage) => this.returned.add(String(msg.properties.correlationId)));
    // As the gateway does: with per-service users only the gateway's may declare them.
    await ch.assertExchange(names.requestExchange, 'topic', { durable: true });
    await ch.assertExchange(names.discoveryExchange, 'topic', { durable: true });
    const announcements = names.serviceAnnounceExchange(this.service);
    const replies = names.serviceReplyExchange(this.service);
    await ch.assertExchange(announcements, 'topic', { durable: true });
    await ch.assertExchange(replies, 'topic', { durable: true });
    const announce = names.listenerQueue('announce', randomUUID());
    await ch.assertQueue(announce, { exclusive: true, autoDelete: true, durable: false });
    // Only on the service's own exchange: an announcement on the discovery exchange is the previous wire.
    await ch.bindQueue(announce, announcements, announceKey(this.service));
    await ch.consume(announce, (msg) => msg && this.announcements.push({ at: Date.now(), msg, body: parse(msg) }), {
      noAck: true,
    });
    // Replies come through P.replies.<service> with routing key = reply_to = this queue's name, as the gateway's do.
    await ch.assertQueue(this.replyQueue, { exclusive: true, durable: false });
    await ch.bindQueue(this.replyQueue, replies, this.replyQueue);
    await ch.consume(
      this.replyQueue,
      (msg) => {
        if (!msg) return;
        const id = String(msg.properties.correlationId);
        this.replies.set(id, [...(this.replies.get(id) ?? []), { at: Date.now(), msg, body: parse(msg) }]);
      },
      { noAck: true },
    );
  }

  /** Asks every instance to announce at once. */
  discover(): void {
    this.ch.publish(this.names.discoveryExchange, DISCOVER_KEY, encodeJson({}), {
      contentType: JSON_TYPE,
      userId: this.user,
    });
  }

  /** A request as the gateway sends it; returns its correlation_id. `deadline`: ms since the epoch. */
  request(messageType: string, deadline: number, correlationId: string = randomUUID()): string {
    this.ch.publish(
      this.names.requestExchange,
      this.service,
      encodeJson({ input: {} }),
      this.properties(messageType, deadline, correlationId, this.user),
    );
    return correlationId;
  }

  /** The same request published by `channel`'s user straight to the work queue (as any user with amqp.default may). */
  static requestFrom(channel: Channel, bus: ConformanceBus, user: string, messageType: string): string {
    const correlationId = randomUUID();
    channel.sendToQueue(
      bus.names.serviceQueue(bus.service),
      encodeJson({ input: {} }),
      bus.properties(messageType, Date.now() + 10_000, correlationId, user),
    );
    return correlationId;
  }

  private properties(messageType: string, deadline: number, correlationId: string, user: string): amqp.Options.Publish {
    return {
      type: messageType,
      correlationId,
      replyTo: this.replyQueue,
      expiration: '10000',
      userId: user,
      contentType: JSON_TYPE,
      mandatory: true,
      headers: encodeHeaders({ correlationId: `conformance-${correlationId}`, requestId: correlationId, deadline }),
    };
  }

  repliesTo(correlationId: string): Seen[] {
    return this.replies.get(correlationId) ?? [];
  }

  wasReturned(correlationId: string): boolean {
    return this.returned.has(correlationId);
  }

  close(): Promise<void> {
    return this.model.close().catch(() => undefined);
  }
}
