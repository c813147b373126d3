import type { Announcement } from '../../contracts/types';
import type { Reply, RequestMessage } from '../transport';

/*
 * The medium of the embedded bus: per service, a queue of deliveries shared round-robin by its consumers within
 * their prefetch (like a work queue with competing consumers), and the broadcast of announcements and discovery
 * requests. Transports (index.ts) put requests in and take replies out; everything is asynchronous.
 */

/** A request on its way through the hub; `settled` once replied, timed out or failed. */
export interface Delivery {
  message: RequestMessage;
  settled: boolean;
  reply(reply: Reply): void;
  unroutable(): void;
}

export interface HubConsumer {
  /** Handles one delivery; settles when the reply has been handed back. */
  run(delivery: Delivery): Promise<void>;
  prefetch: number;
  inflight: number;
  active: boolean;
}

interface ServiceQueue {
  consumers: HubConsumer[];
  backlog: Delivery[];
  next: number;
}

/** The shared medium of a set of in-process transports (one per process by default: defaultHub()). */
export class InProcessHub {
  private readonly queues = new Map<string, ServiceQueue>();
  private readonly announcementListeners = new Set<(a: Announcement) => void>();
  private readonly discoveryListeners = new Set<() => void>();

  /** Whether any consumer currently serves `service`. */
  hasConsumer(service: string): boolean {
    return (this.queues.get(service)?.consumers.length ?? 0) > 0;
  }

  /** @internal Queues a delivery; false (nothing queued) when nobody serves the service. */
  dispatch(service: string, delivery: Delivery): boolean {
    const queue = this.queues.get(service);
    if (!queue || queue.consumers.length === 0) return false;
    queue.backlog.push(delivery);
    queueMicrotask(() => this.pump(queue));
    return true;
  }

  /** @internal */
  addConsumer(service: string, consumer: HubConsumer): void {
    let queue = this.queues.get(service);
    if (!queue) {
      queue = { consumers: [], backlog: [], next: 0 };
      this.queues.set(service, queue);
    }
    queue.consumers.push(consumer);
    const q = queue;
    queueMicrotask(() => this.pump(q));
  }

  /** @internal Removes a consumer; if it was the last one, what waits in the queue is unroutable now. */
  removeConsumer(service: string, consumer: HubConsumer): void {
    const queue = this.queues.get(service);
    if (!queue) return;
    consumer.active = false;
    queue.consumers = queue.consumers.filter((c) => c !== consumer);
    if (queue.consumers.length > 0) return;
    this.queues.delete(service);
    for (const delivery of queue.backlog.splice(0)) delivery.unroutable();
  }

  /** @internal Hands queued deliveries to consumers with free prefetch, round-robin. */
  pump(queue: ServiceQueue): void {
    while (queue.backlog.length > 0) {
      const n = queue.consumers.length;
      if (n === 0) return;
      let chosen: HubConsumer | undefined;
      for (let i = 0; i < n; i++) {
        const candidate = queue.consumers[(queue.next + i) % n];
        if (candidate.active && candidate.inflight < candidate.prefetch) {
          chosen = candidate;
          queue.next = (queue.next + i + 1) % n;
          break;
        }
      }
      if (!chosen) return;
      const delivery = queue.backlog.shift() as Delivery;
      // Like a message whose expiration passed in the queue: the requester has already given up.
      if (delivery.settled) continue;
      const consumer = chosen;
      consumer.inflight++;
      consumer.run(delivery).finally(() => {
        consumer.inflight--;
        this.pump(queue);
      });
    }
  }

  /** @internal */
  addAnnouncementListener(listener: (a: Announcement) => void): void {
    this.announcementListeners.add(listener);
  }

  /** @internal */
  removeAnnouncementListener(listener: (a: Announcement) => void): void {
    this.announcementListeners.delete(listener);
  }

  /** @internal */
  addDiscoveryListener(listener: () => void): void {
    this.discoveryListeners.add(listener);
  }

  /** @internal */
  removeDiscoveryListener(listener: () => void): void {
    this.discoveryListeners.delete(listener);
  }

  /** @internal Broadcast: every listener gets its own copy, asynchronously. */
  broadcastAnnouncement(announcement: Announcement): void {
    const text = JSON.stringify(announcement);
    for (const listener of [...this.announcementListeners]) {
      setImmediate(() => {
        if (this.announcementListeners.has(listener)) listener(JSON.parse(text) as Announcement);
      });
    }
  }

  /** @internal */
  broadcastDiscoveryRequest(): void {
    for (const listener of [...this.discoveryListeners]) {
      setImmediate(() => {
        if (this.discoveryListeners.has(listener)) listener();
      });
    }
  }
}

let processHub: InProcessHub | undefined;

/** The process-wide hub: a gateway and services started in one process find each other through it. */
export function defaultHub(): InProcessHub {
  if (!processHub) processHub = new InProcessHub();
  return processHub;
}
