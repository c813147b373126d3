import type { Channel, ChannelModel, ConfirmChannel, ConsumeMessage, Message } from 'amqplib';
import type { Announcement } from '../../contracts/types';
import { describeError } from '../../errors/describe';
import { badGateway, gatewayTimeout } from '../../errors/gateway-error';
import { newId } from '../../request/ids';
import { internalErrorReply, isReply } from '../envelope';
import { busClosing, busNotConnected, busRefused, noInstance, notEncodable } from '../failures';
import { PendingRequests, type PendingRequest } from '../pending';
import type { Reply, RequestMessage } from '../transport';
import { channelRetryDelay, closeQuietly, type AmqpConnection } from './connection';
import { announceKey, DISCOVER_KEY, encodeHeaders, encodeJson, JSON_TYPE, REPLY_TO } from './wire';

/*
 * The gateway side of the AMQP transport: requests out and their replies back over direct reply-to (with their
 * deadlines, and basic.return for a service nobody consumes), and the confirmed publishes that have no reply
 * (announcements, discovery requests).
 */

interface AmqpPendingRequest extends PendingRequest {
  /** The request's trace id, for the log lines about it. */
  correlationId: string;
}

/** The gateway's two publishing channels (see AmqpPublisher.pub). */
interface Channels {
  rpc: Channel;
  confirm: ConfirmChannel;
}

export class AmqpPublisher {
  /**
   * Requests go out on a plain channel that also consumes direct reply-to (the reply is the request's
   * acknowledgement; publisher confirms on it cost the broker and the gateway a frame per request and only turned a
   * rare broker nack from a timeout into a 503). Announcements and discovery requests, which have no reply, go out
   * on a confirm channel. The two live and die together.
   */
  private pub: Channels | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private failures = 0;
  private readonly pending = new PendingRequests<AmqpPendingRequest>();
  private readonly rpcExchange: string;
  private readonly discoveryExchange: string;
  private readonly brokerUser: string | undefined;

  constructor(private readonly conn: AmqpConnection) {
    this.rpcExchange = conn.names.rpcExchange;
    this.discoveryExchange = conn.names.discoveryExchange;
    this.brokerUser = conn.brokerUser;
  }

  /** Opens both channels on a new connection (which starts the channel backoff afresh). */
  connected(model: ChannelModel): Promise<void> {
    this.failures = 0;
    return this.open(model);
  }

  private async open(model: ChannelModel): Promise<void> {
    // Set once both channels are ready; a close before that is handled by the failure path below.
    let channels: Channels | undefined;
    const onClosed = (): void => {
      if (channels) this.onChannelClosed(channels, model);
    };
    const rpc = await model.createChannel();
    this.conn.watchChannel(rpc, 'publisher channel', onClosed);
    rpc.on('return', (msg: Message) => this.onReturn(msg));
    let confirm: ConfirmChannel | undefined;
    try {
      confirm = await model.createConfirmChannel();
      this.conn.watchChannel(confirm, 'announcement channel', onClosed);
      await this.conn.declareExchanges(rpc);
      await rpc.consume(REPLY_TO, (msg) => msg && this.onReply(msg), { noAck: true });
    } catch (err) {
      await closeQuietly(rpc, confirm);
      throw err;
    }
    if (this.conn.model !== model || this.conn.closing) {
      await closeQuietly(rpc, confirm);
      return;
    }
    channels = { rpc, confirm };
    this.pub = channels;
    this.failures = 0;
  }

  /** The connection is gone: so are the channels, and whatever was in flight can no longer be answered (502). */
  lost(): void {
    this.pub = null;
    this.halt(badGateway);
  }

  /** The first step of close(): no re-open, and the requests in flight are answered 503. */
  stop(): void {
    this.halt(busClosing);
  }

  /** No more re-opening, and every request in flight answered with `failure` of its service. */
  private halt(failure: (service: string) => Error): void {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.pending.failAll((p) => failure(p.service));
  }

  async closeChannels(): Promise<void> {
    const pub = this.pub;
    this.pub = null;
    if (pub) await closeQuietly(pub.rpc, pub.confirm);
  }

  abortPending(error: () => Error): void {
    this.pending.failAll(error);
  }

  private onChannelClosed(channels: Channels, model: ChannelModel): void {
    if (this.pub !== channels) return;
    this.pub = null;
    // Either channel gone: close its twin, so both are re-opened together.
    void closeQuietly(channels.rpc, channels.confirm);
    // Replies come back on the rpc channel: whatever is in flight can no longer be answered.
    this.pending.failAll((p) => badGateway(p.service));
    // If the whole connection is going down, lost() follows and the timer finds nothing to do.
    this.scheduleReopen(model);
  }

  /** The broker closed a publisher channel (e.g. a publish to a deleted exchange); the connection may be fine. */
  private scheduleReopen(model: ChannelModel): void {
    if (this.conn.closing || this.conn.model !== model || this.retryTimer) return;
    const delay = channelRetryDelay(this.failures++);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      if (this.conn.closing || this.conn.model !== model || this.pub) return;
      this.open(model).catch((err) => {
        this.conn.logger.warn(`bus: could not re-open the publisher channel: ${describeError(err)}`);
        this.scheduleReopen(model);
      });
    }, delay);
  }

  /** A request's deadline passed with no reply: 504. One function for every request's timer (no closure each). */
  private readonly onDeadline = (id: string, timeoutMs: number): void => {
    this.pending.take(id)?.reject(gatewayTimeout(timeoutMs));
  };

  request(message: RequestMessage, timeoutMs: number): Promise<Reply> {
    const service = message.targetService;
    const ch = this.pub?.rpc;
    if (this.conn.state() !== 'up' || !ch) return Promise.reject(busNotConnected(service));
    let body: Buffer;
    let headers: Record<string, string>;
    try {
      body = encodeJson({ input: message.input });
      headers = encodeHeaders(message.headers);
    } catch {
      return Promise.reject(notEncodable());
    }
    const deadline = Math.max(1, Math.ceil(Number.isFinite(timeoutMs) ? timeoutMs : 1));
    const id = newId();
    return new Promise<Reply>((resolve, reject) => {
      const timer = setTimeout(this.onDeadline, deadline, id, timeoutMs);
      this.pending.add(id, { service, correlationId: String(message.headers.correlationId ?? ''), timer, resolve, reject });
      try {
        // No confirm: a lost or dropped request ends at its deadline (504); an unroutable one comes back (basic.return, 503).
        ch.publish(this.rpcExchange, service, body, {
          mandatory: true,
          expiration: String(deadline),
          type: message.messageType,
          correlationId: id,
          replyTo: REPLY_TO,
          contentType: JSON_TYPE,
          headers,
          // Services may accept requests from the gateway's broker user only (serve's acceptRequestsFrom).
          userId: this.brokerUser,
        });
      } catch (err) {
        const closed = err instanceof Error && err.name === 'IllegalOperationError';
        this.pending.take(id)?.reject(closed ? busNotConnected(service) : notEncodable());
      }
    });
  }

  /** basic.return: no queue is bound for the service (mandatory publish). */
  private onReturn(msg: Message): void {
    const p = this.pending.take(msg.properties.correlationId as string | undefined);
    if (p) p.reject(noInstance(p.service));
  }

  private onReply(msg: ConsumeMessage): void {
    const p = this.pending.take(msg.properties.correlationId as string | undefined);
    if (!p) return; // late (after the deadline) or unknown: dropped
    let reply: unknown;
    try {
      reply = JSON.parse(msg.content.toString('utf8'));
    } catch {
      reply = undefined;
    }
    if (!isReply(reply)) {
      this.conn.logger.error(`[${p.correlationId}] bus: malformed reply from service '${p.service}'`);
      p.resolve(internalErrorReply());
      return;
    }
    p.resolve(reply);
  }

  async requestDiscovery(): Promise<void> {
    await this.publishConfirmed(this.discoveryExchange, DISCOVER_KEY, encodeJson({}));
  }

  /** With the broker user as `user_id`, so a gateway that requires it can tell who announced. */
  async announce(announcement: Announcement): Promise<void> {
    await this.publishConfirmed(this.discoveryExchange, announceKey(announcement.service), encodeJson(announcement), this.brokerUser);
  }

  private publishConfirmed(exchange: string, routingKey: string, body: Buffer, userId?: string): Promise<void> {
    const ch = this.pub?.confirm;
    if (this.conn.state() !== 'up' || !ch) return Promise.reject(busNotConnected());
    return new Promise<void>((resolve, reject) => {
      try {
        ch.publish(exchange, routingKey, body, { contentType: JSON_TYPE, ...(userId !== undefined ? { userId } : {}) }, (err: unknown) => {
          if (err) reject(busRefused());
          else resolve();
        });
      } catch {
        reject(busNotConnected());
      }
    });
  }
}
