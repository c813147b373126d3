import type {
  AnnouncementListener,
  Reply,
  RequestHandler,
  RequestMessage,
  Subscription,
  Transport,
  TransportState,
  WorkQueueOptions,
} from '../bus/transport';
import type { Announcement } from '../contracts/types';
import type { Logger } from '../logger';
import { inert } from '../log-once';
import { busOutcome } from '../observability/bus-call';
import { Bulkhead } from './bulkhead';
import { CircuitBreakers, type CircuitOutcome, type CircuitState } from './circuit';
import { circuitOpen, inMaintenance, overloaded, type RefusalReason, type ServiceRefusal } from './refusal';

/** What the guard counts (GatewayMetrics, when there is a metrics port). */
interface GuardMetrics {
  serviceRefused(service: string, reason: RefusalReason): void;
  circuitTransition(service: string, to: CircuitState): void;
}

export interface GuardOptions {
  maxInFlightPerService: number;
  circuitFailureThreshold: number;
  circuitOpenSeconds: number;
  /** The Retry-After of a service in maintenance, undefined while it serves (the registry's answer). */
  maintenance: (service: string) => number | undefined;
  log: Pick<Logger, 'warn' | 'info'>;
  /** Read per use: the metrics are made after the transport. */
  metrics?: () => GuardMetrics | undefined;
  now?: () => number;
}

/** What GET /health shows of the guard. */
export interface GuardStatus {
  /** Circuits open or half-open; `retryAfterSeconds` of an open one: until its trial request may go. */
  circuits: Array<{ service: string; state: CircuitState; retryAfterSeconds?: number }>;
}

/**
 * Between the request path and the bus, per service: a service in maintenance, a service whose circuit is open, and
 * a service with maxInFlightPerService requests already awaiting replies are answered 503 SERVICE_UNAVAILABLE with
 * Retry-After at once, and nothing is sent to the bus. Only 502/504 outcomes of the bus count against a circuit: a
 * deadline passed, a broken reply; an error a service replies on purpose is an answer, like any other.
 * Each change (a circuit opening, a service starting to be shed) is one log line, never one per request.
 */
export class ServiceGuard {
  private readonly bulkhead: Bulkhead;
  private readonly circuits: CircuitBreakers;
  /** Services being shed now: logged when shedding starts, and when their requests in flight fall to half the bound. */
  private readonly shedding = new Set<string>();
  private readonly now: () => number;

  constructor(private readonly options: GuardOptions) {
    this.now = options.now ?? Date.now;
    this.bulkhead = new Bulkhead(options.maxInFlightPerService);
    this.circuits = new CircuitBreakers({
      threshold: options.circuitFailureThreshold,
      openMs: options.circuitOpenSeconds * 1000,
      now: this.now,
      onTransition: (service, from, to) => this.transition(service, from, to),
    });
  }

  /** `transport` with its request() guarded; everything else is the transport's own. */
  around(transport: Transport): Transport {
    return new GuardedTransport(transport, (message, timeoutMs) => this.request(transport, message, timeoutMs));
  }

  status(): GuardStatus {
    const now = this.now();
    return {
      circuits: this.circuits
        .notClosed()
        .map(({ service, state, until }) =>
          until === undefined
            ? { service, state }
            : { service, state, retryAfterSeconds: Math.max(0, Math.ceil((until - now) / 1000)) },
        ),
    };
  }

  /** Requests to `service` awaiting replies now. */
  inFlight(service: string): number {
    return this.bulkhead.count(service);
  }

  private async request(bus: Transport, message: RequestMessage, timeoutMs: number): Promise<Reply> {
    const service = message.targetService;
    const maintenance = this.options.maintenance(service);
    if (maintenance !== undefined) throw this.refused(inMaintenance(service, maintenance));
    // Before the circuit is asked: a refusal for load must not use up the half-open trial.
    if (this.bulkhead.full(service)) {
      this.startShedding(service);
      throw this.refused(overloaded(service));
    }
    const admission = this.circuits.admit(service);
    if (!admission.go) throw this.refused(circuitOpen(service, admission.retryAfterSeconds));
    this.bulkhead.enter(service);
    let outcome: CircuitOutcome = 'neutral';
    try {
      const reply = await bus.request(message, timeoutMs);
      outcome = 'success';
      return reply;
    } catch (error) {
      outcome = circuitOutcomeOf(error, bus.state());
      throw error;
    } finally {
      this.bulkhead.leave(service);
      this.circuits.ended(service, admission.trial, outcome);
      if (this.shedding.has(service) && this.bulkhead.count(service) <= this.options.maxInFlightPerService / 2)
        this.stopShedding(service);
    }
  }

  private refused(error: ServiceRefusal): ServiceRefusal {
    this.options.metrics?.()?.serviceRefused(String(error.extra.service), error.reason);
    return error;
  }

  private startShedding(service: string): void {
    if (this.shedding.has(service)) return;
    this.shedding.add(service);
    this.options.log.warn(
      `service ${inert(service)} has ${this.options.maxInFlightPerService} requests awaiting replies (maxInFlightPerService): further requests to it are answered 503 until fewer are`,
    );
  }

  private stopShedding(service: string): void {
    this.shedding.delete(service);
    this.options.log.info(
      `service ${inert(service)} has ${this.bulkhead.count(service)} requests awaiting replies: no longer shedding`,
    );
  }

  private transition(service: string, from: CircuitState, to: CircuitState): void {
    this.options.metrics?.()?.circuitTransition(service, to);
    const name = inert(service);
    if (to === 'open')
      this.options.log.warn(
        from === 'half-open'
          ? `circuit of service ${name} opened again: its trial request failed; its routes answer 503 for ${this.options.circuitOpenSeconds} s`
          : `circuit of service ${name} opened after ${this.options.circuitFailureThreshold} consecutive 502/504 outcomes (deadline passed or broken reply); its routes answer 503 for ${this.options.circuitOpenSeconds} s`,
      );
    else if (to === 'half-open')
      this.options.log.info(`circuit of service ${name} half-open: one trial request goes through`);
    else this.options.log.info(`circuit of service ${name} closed: its trial request was answered`);
  }
}

/**
 * What a failed request means for its service's circuit: a passed deadline (a work queue nobody consumes ends so) and
 * a broken reply (502
 * while the bus is up) count; the bus being down, blocked or closing is not the service's doing.
 */
function circuitOutcomeOf(error: unknown, busState: TransportState): CircuitOutcome {
  switch (busOutcome({ error })) {
    case 'timeout':
      return 'failure';
    // No queue bound for the service (no instance): answered 503 at once already, so nothing waits; counting it
    // would keep the routes 503 for circuitOpenSeconds after an instance is back (the topology test: 3 s became 13).
    case 'unroutable':
      return 'neutral';
    // A connection that dropped fails every request in flight with 502: the bus is down by the time they settle.
    case 'connection_lost':
      return busState === 'up' ? 'failure' : 'neutral';
    default:
      return 'neutral';
  }
}

/** A transport whose request() is the guard's; every other member is the wrapped transport's. */
class GuardedTransport implements Transport {
  readonly kind: Transport['kind'];
  readonly brokerUser?: string;
  readonly requestExchange?: string;

  constructor(
    private readonly bus: Transport,
    readonly request: (message: RequestMessage, timeoutMs: number) => Promise<Reply>,
  ) {
    this.kind = bus.kind;
    if (bus.brokerUser !== undefined) this.brokerUser = bus.brokerUser;
    if (bus.requestExchange !== undefined) this.requestExchange = bus.requestExchange;
  }

  state(): TransportState {
    return this.bus.state();
  }
  node(): string | undefined {
    return this.bus.node?.();
  }
  blockedReason(): string | undefined {
    return this.bus.blockedReason?.();
  }
  start(): Promise<void> {
    return this.bus.start();
  }
  close(): Promise<void> {
    return this.bus.close();
  }
  onStateChange(listener: (state: TransportState) => void): void {
    this.bus.onStateChange(listener);
  }
  abortPending(error: () => Error): void {
    this.bus.abortPending(error);
  }
  onAnnouncement(listener: AnnouncementListener): Promise<Subscription> {
    return this.bus.onAnnouncement(listener);
  }
  refusedChannels(): string[] {
    return this.bus.refusedChannels?.() ?? [];
  }
  announcementsUnheard(): string | undefined {
    return this.bus.announcementsUnheard?.();
  }
  requestDiscovery(): Promise<void> {
    return this.bus.requestDiscovery();
  }
  serve(service: string, handler: RequestHandler, opts?: WorkQueueOptions): Promise<Subscription> {
    return this.bus.serve(service, handler, opts);
  }
  announce(announcement: Announcement): Promise<void> {
    return this.bus.announce(announcement);
  }
  onDiscoveryRequest(listener: () => void): Promise<Subscription> {
    return this.bus.onDiscoveryRequest(listener);
  }
}
