import { randomUUID } from 'node:crypto';
import type { Announcement } from '../../contracts/types';
import { silentLogger, type Logger } from '../../logger';
import { DEFAULT_PREFETCH } from '../constants';
import { invokeHandler, replyJson } from '../handler';
import { busClosing, busNotConnected, noInstance, notEncodable } from '../failures';
import { PendingRequests, timedOut, type PendingRequest } from '../pending';
import { callGuarded, notifyState } from '../notify';
import { defaultHub, type Delivery, type HubConsumer, type InProcessHub } from './hub';
import type {
  AnnouncementListener,
  Reply,
  RequestHandler,
  RequestMessage,
  Subscription,
  Transport,
  TransportState,
} from '../transport';

/*
 * The embedded bus: transports that share one InProcessHub talk to each other inside one Node process.
 * It keeps the semantics of the AMQP transport (competing consumers with prefetch, 503 when nobody
 * serves a service, 504 at the deadline with late replies dropped, broadcast announcements) and
 * delivers asynchronously. Every message crosses the boundary as a JSON copy — the same encoding the
 * AMQP transport puts on the wire — so a service can neither mutate the gateway's objects nor get
 * away with values (Dates, undefined, class instances) that would not survive a real broker.
 */

/** A JSON round trip: a deep copy with exactly the fidelity of the AMQP wire format. */
function jsonCopy<T>(value: T): T {
  const text = JSON.stringify(value);
  return (text === undefined ? undefined : JSON.parse(text)) as T;
}

/** The trace id of a request, for the log line about a reply that is not JSON. */
function traceIdOf(message: RequestMessage): string {
  return String(message.headers?.correlationId);
}

/** A request in flight and the delivery its reply (or its deadline) settles. */
interface InProcessPending extends PendingRequest {
  delivery: Delivery;
}

/** The in-process Transport. All instances on one hub see each other; see the file comment. */
export class InProcessTransport implements Transport {
  readonly kind = 'inprocess' as const;
  private current: TransportState = 'connecting';
  private readonly stateListeners: Array<(state: TransportState) => void> = [];
  /** A request past its deadline is answered 504, and its delivery marked settled (a late reply is dropped). */
  private readonly pending = new PendingRequests<InProcessPending>((p) => {
    p.delivery.settled = true;
    timedOut(p);
  });
  private readonly subscriptions = new Set<Subscription>();
  private readonly logger: Logger;
  private closing: Promise<void> | undefined;

  constructor(
    private readonly hub: InProcessHub = defaultHub(),
    opts: { logger?: Logger } = {},
  ) {
    this.logger = opts.logger ?? silentLogger;
  }

  state(): TransportState {
    return this.current;
  }

  async start(): Promise<void> {
    if (this.current === 'closed') throw new Error('The transport is closed');
    this.setState('up');
  }

  close(): Promise<void> {
    if (!this.closing) this.closing = this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    this.setState('closed');
    this.pending.failAll((p) => busClosing(p.service));
    await Promise.all([...this.subscriptions].map((s) => s.close()));
  }

  abortPending(error: () => Error): void {
    this.pending.failAll(error);
  }

  onStateChange(listener: (state: TransportState) => void): void {
    this.stateListeners.push(listener);
  }

  private setState(next: TransportState): void {
    if (this.current === next) return;
    this.current = next;
    notifyState(this.stateListeners, next, this.logger);
  }

  request(message: RequestMessage, timeoutMs: number): Promise<Reply> {
    const service = message.targetService;
    if (this.current !== 'up') {
      return Promise.reject(busNotConnected(service));
    }
    let copy: RequestMessage;
    try {
      copy = jsonCopy(message);
    } catch {
      return Promise.reject(notEncodable());
    }
    const id = randomUUID();
    return new Promise<Reply>((resolve, reject) => {
      const take = (): InProcessPending | undefined => {
        const p = this.pending.take(id);
        if (p) delivery.settled = true;
        return p;
      };
      const delivery: Delivery = {
        message: copy,
        settled: false,
        reply: (reply) => take()?.resolve(reply),
        unroutable: () => take()?.reject(noInstance(service)),
      };
      this.pending.add(id, { service, timeoutMs, delivery, resolve, reject });
      if (!this.hub.dispatch(service, delivery)) delivery.unroutable();
    });
  }

  /** Runs one delivery through a handler of this transport and hands the reply back (as a copy). */
  private async handle(handler: RequestHandler, delivery: Delivery): Promise<void> {
    await Promise.resolve(); // never run a handler synchronously inside the requester's call
    const { message } = delivery;
    const reply = await invokeHandler(handler, jsonCopy(message), this.logger);
    const copy = JSON.parse(
      replyJson(reply, this.logger, traceIdOf, message, message.targetService, message.messageType),
    ) as Reply;
    delivery.reply(copy); // a no-op when the requester has timed out: late replies are dropped
  }

  /** In-process announcements come from code in this process: there is no broker user to name (origin `{}`). */
  async onAnnouncement(listener: AnnouncementListener): Promise<Subscription> {
    this.assertOpen();
    const wrapped = (a: Announcement): void => callGuarded(this.logger, 'announcement listener', () => listener(a, {}));
    this.hub.addAnnouncementListener(wrapped);
    return this.track(async () => this.hub.removeAnnouncementListener(wrapped));
  }

  async requestDiscovery(): Promise<void> {
    this.assertUp();
    this.hub.broadcastDiscoveryRequest();
  }

  async serve(service: string, handler: RequestHandler, opts: { prefetch?: number } = {}): Promise<Subscription> {
    this.assertOpen();
    const running = new Set<Promise<void>>();
    const consumer: HubConsumer = {
      run: (delivery) => {
        const p = this.handle(handler, delivery);
        running.add(p);
        return p.finally(() => running.delete(p));
      },
      prefetch: Math.max(1, opts.prefetch ?? DEFAULT_PREFETCH),
      inflight: 0,
      active: true,
    };
    this.hub.addConsumer(service, consumer);
    return this.track(async () => {
      // Nothing new is delivered from here on; handlers already running finish and reply.
      this.hub.removeConsumer(service, consumer);
      await Promise.allSettled([...running]);
    });
  }

  async announce(announcement: Announcement): Promise<void> {
    this.assertUp();
    this.hub.broadcastAnnouncement(jsonCopy(announcement));
  }

  async onDiscoveryRequest(listener: () => void): Promise<Subscription> {
    this.assertOpen();
    const wrapped = (): void => callGuarded(this.logger, 'discovery listener', listener);
    this.hub.addDiscoveryListener(wrapped);
    return this.track(async () => this.hub.removeDiscoveryListener(wrapped));
  }

  private track(stop: () => Promise<void>): Subscription {
    let closed: Promise<void> | undefined;
    const subscription: Subscription = {
      close: () => {
        if (!closed) {
          this.subscriptions.delete(subscription);
          closed = stop();
        }
        return closed;
      },
    };
    this.subscriptions.add(subscription);
    return subscription;
  }

  private assertOpen(): void {
    if (this.current === 'closed') throw new Error('The transport is closed');
  }

  private assertUp(): void {
    if (this.current !== 'up') throw busNotConnected();
  }
}
