import {
  Counter,
  Gauge,
  Registry,
  collectDefaultMetrics,
  type Metric,
  type OpenMetricsContentType,
  type RegistryContentType,
} from 'prom-client';
import type { TransportState } from '../bus/transport';
import { FastCounter, FastHistogram } from './fast-metrics';
import type { StoreFailure, StoreMetrics, StoreState } from '../edge/store-health';
import { ERROR_CODES } from '../errors/codes';
import type { IncomingMessage } from 'node:http';
import type { RouteLabels } from './route-label';
import type { MetricsNaming } from '../settings/defaults';
import type { RefusalReason } from '../resilience/refusal';
import type { CircuitState } from '../resilience/circuit';

/** Every metric name starts with this, so the gateway's series are found together beside other exporters'. */
const METRIC_PREFIX = 'contracts_gateway_';

/** Seconds; from a cached answer to a slow service near the default 30 s deadline. */
const HTTP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const BUS_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/**
 * The request-duration histogram under each naming (METRICS_NAMING): its name, help and label names, in the order
 * httpAnswered() gives the values (route template, method, status). `otel` is OpenTelemetry's HTTP semantic
 * convention `http.server.request.duration` as OpenTelemetry's Prometheus exporters write it (dots to underscores,
 * the unit as a suffix); its buckets stay the gateway's, which reach the 30 s default deadline.
 */
const DURATION_HISTOGRAMS: Record<MetricsNaming, { name: string; help: string; labelNames: readonly string[] }> = {
  prometheus: {
    name: `${METRIC_PREFIX}http_request_duration_seconds`,
    help: 'Time from the request to the end of its answer, by route template, method and status',
    labelNames: ['route', 'method', 'status'],
  },
  otel: {
    name: 'http_server_request_duration_seconds',
    help: 'Duration of HTTP server requests (OpenTelemetry http.server.request.duration)',
    labelNames: ['http_route', 'http_request_method', 'http_response_status_code'],
  },
};

/** How a request sent over the bus ended (bus round-trip histogram's `outcome`). */
export type BusOutcome =
  | 'reply'
  | 'error_reply'
  | 'timeout'
  | 'unroutable'
  | 'connection_lost'
  | 'bus_unavailable'
  | 'aborted'
  | 'failed'
  | RefusalReason;

const STATES: readonly TransportState[] = ['connecting', 'up', 'blocked', 'down', 'closed'];

/**
 * The error answers exported at 0 from the start, so a dashboard's 5xx and 429 panels read 0 rather than "no data"
 * before the first one: every code of the table answered 5xx or 429 (SERVICE_UNAVAILABLE also as 502).
 */
function zeroErrorSeries(): Array<[code: string, status: string]> {
  const series = Object.entries(ERROR_CODES)
    .filter(([, info]) => info.status >= 500 || info.status === 429)
    .map(([code, info]): [string, string] => [code, String(info.status)]);
  return [...series, ['SERVICE_UNAVAILABLE', '502']];
}

/**
 * Drops prom-client's default gauges named `…_total` (`nodejs_active_handles_total`, `…_requests_total`,
 * `…_resources_total`): `_total` is the suffix of counters, so `promtool check metrics` refuses them and PromQL
 * tools take them for counters. Each is the sum of the gauge without the suffix, labelled by `type`, which stays:
 * `sum(nodejs_active_handles)` reads the same number.
 */
function leaveOutTotalGauges(registry: Registry): void {
  // prom-client's declarations type `type` as a numeric enum; at run time it is the name ('counter', 'gauge', …).
  for (const metric of registry.getMetricsAsArray() as unknown as Array<{ name: string; type: string }>) {
    if (metric.name.endsWith('_total') && metric.type !== 'counter') registry.removeSingleMetric(metric.name);
  }
}

/** A metric as prom-client's registry reads it (what registerMetric takes is typed as the metric classes only). */
interface Readable {
  name: string;
  help: string;
  type: unknown;
  aggregator: unknown;
  get(): Promise<{ name: string }>;
  /** A prom-client histogram's: its values as the registry writes them (get() splays their labels). */
  getForPromString?(): Promise<{ name: string }>;
}

/** `metric` under its OpenMetrics family name (a counter's without `_total`), read through, never modified. */
function openMetricsView(metric: Readable): Metric {
  const name = metric.type === 'counter' ? metric.name.replace(/_total$/, '') : metric.name;
  const view = {
    name,
    help: metric.help,
    type: metric.type,
    aggregator: metric.aggregator,
    get: async () => ({ ...(await (metric.getForPromString ?? metric.get).call(metric)), name }),
  };
  return view as unknown as Metric;
}

/** What the registry counts report, read at scrape time (no work on the request path). */
export interface RegistryCounts {
  contracts(): number;
  services(): number;
  instances(): number;
}

/**
 * The gateway's Prometheus metrics, in a registry of their own (never prom-client's global one, which another
 * library in the process may fill). What is counted per request or per bus message lives in FastCounter and
 * FastHistogram (fast-metrics.ts); the rest are prom-client's own metrics.
 */
export class GatewayMetrics implements StoreMetrics {
  readonly registry = new Registry();
  private readonly httpRequests: FastCounter;
  private readonly httpDuration: FastHistogram;
  /** Requests received and not answered: counted up and down here, read at scrape time. */
  private inFlightNow = 0;
  private readonly busDuration: FastHistogram;
  private readonly busState: Gauge;
  private readonly reconnects: Counter;
  private readonly announcements: FastCounter;
  private readonly authFailures: FastCounter;
  private readonly errorAnswers: FastCounter;
  private readonly rateLimited: FastCounter;
  private readonly storeUp: Gauge;
  private readonly storeFailures: Counter;
  private readonly storeBypassed: Counter;
  private readonly repliesRefused: FastCounter;
  private readonly breakingChanges: Counter;
  private readonly deprecatedRequests: FastCounter;
  private readonly serviceRefusals: FastCounter;
  private readonly circuitTransitions: Counter;
  private everUp = false;
  private lastBusState: TransportState | undefined;

  /**
   * `routes`: the route labels of the request observer, which labels the same requests' http series;
   * `busNode`: the broker node the bus connection is on now (AMQP; read at scrape time); `naming`: the
   * request-duration histogram's names (METRICS_NAMING).
   */
  constructor(
    counts: RegistryCounts,
    private readonly routes: RouteLabels,
    busNode: () => string | undefined = () => undefined,
    naming: MetricsNaming = 'prometheus',
  ) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    leaveOutTotalGauges(this.registry);
    const fast = <M extends FastCounter | FastHistogram>(metric: M): M => {
      this.registry.registerMetric(metric as unknown as Metric);
      return metric;
    };
    this.httpRequests = fast(
      new FastCounter({
        name: `${METRIC_PREFIX}http_requests_total`,
        help: 'HTTP requests answered, by route template, method and status',
        labelNames: ['route', 'method', 'status'],
      }),
    );
    this.httpDuration = fast(new FastHistogram({ ...DURATION_HISTOGRAMS[naming], buckets: HTTP_BUCKETS }));
    const inFlight = (): number => this.inFlightNow;
    new Gauge({
      name: `${METRIC_PREFIX}http_requests_in_flight`,
      help: 'HTTP requests received and not answered yet',
      registers,
      collect() {
        this.set(inFlight());
      },
    });
    this.busDuration = fast(
      new FastHistogram({
        name: `${METRIC_PREFIX}bus_request_duration_seconds`,
        help: 'Time waiting for the service: from sending the message to its reply or failure, by target service and outcome',
        labelNames: ['service', 'outcome'],
        buckets: BUS_BUCKETS,
      }),
    );
    this.busState = new Gauge({
      name: `${METRIC_PREFIX}bus_connection_state`,
      help: 'The bus connection state: 1 for the current one',
      labelNames: ['state'],
      registers,
    });
    for (const state of STATES) this.busState.set({ state }, 0);
    // One series, for the node of BUS_URL's list in use now; none while the bus is down.
    new Gauge({
      name: `${METRIC_PREFIX}bus_connection_node`,
      help: 'The broker node (host:port) the bus connection is on: 1 for the current one',
      labelNames: ['node'],
      registers,
      collect() {
        this.reset();
        const node = busNode();
        if (node !== undefined) this.set({ node }, 1);
      },
    });
    this.reconnects = new Counter({
      name: `${METRIC_PREFIX}bus_reconnects_total`,
      help: 'Times the bus connection came back up after it was lost',
      registers,
    });
    this.announcements = fast(
      new FastCounter({
        name: `${METRIC_PREFIX}announcements_total`,
        help: 'Service announcements applied (accepted) or refused, by reason',
        labelNames: ['outcome', 'reason'],
      }),
    );
    this.authFailures = fast(
      new FastCounter({
        name: `${METRIC_PREFIX}auth_failures_total`,
        help: 'Requests refused 401 or 403, by error code',
        labelNames: ['code'],
      }),
    );
    this.errorAnswers = fast(
      new FastCounter({
        name: `${METRIC_PREFIX}error_responses_total`,
        help: 'Error answers by error code and status',
        labelNames: ['code', 'status'],
      }),
    );
    for (const [code, status] of zeroErrorSeries()) this.errorAnswers.child(code, status);
    this.rateLimited = fast(
      new FastCounter({
        name: `${METRIC_PREFIX}rate_limited_total`,
        help: 'Requests answered 429 by a rate limit, by route template',
        labelNames: ['route'],
      }),
    );
    this.storeUp = new Gauge({
      name: `${METRIC_PREFIX}rate_limit_store_up`,
      help: 'The rate-limit counter store: 1 while it answers, 0 while degraded',
      registers,
    });
    this.storeFailures = new Counter({
      name: `${METRIC_PREFIX}rate_limit_store_failures_total`,
      help: 'Rate-limit store calls that failed, by reason (timeout, error, not_connected)',
      labelNames: ['reason'],
      registers,
    });
    this.storeBypassed = new Counter({
      name: `${METRIC_PREFIX}rate_limit_store_bypassed_total`,
      help: 'Rate-limited requests not counted because the store was unavailable: allowed (fail open) or refused (fail closed)',
      labelNames: ['outcome'],
      registers,
    });
    this.repliesRefused = fast(
      new FastCounter({
        name: `${METRIC_PREFIX}bus_replies_refused_total`,
        help: "Replies dropped because another broker user than the service's published them, by service",
        labelNames: ['service'],
      }),
    );
    this.breakingChanges = new Counter({
      name: `${METRIC_PREFIX}breaking_changes_total`,
      help: 'Announced changes that break clients of a served contract, each counted once: accepted (breakingChanges: warn) or refused',
      labelNames: ['outcome'],
      registers,
    });
    for (const outcome of ['accepted', 'refused']) this.breakingChanges.inc({ outcome }, 0);
    this.deprecatedRequests = fast(
      new FastCounter({
        name: `${METRIC_PREFIX}deprecated_requests_total`,
        help: 'Requests to routes of deprecated contracts, by route template and message type',
        labelNames: ['route', 'message_type'],
      }),
    );
    this.serviceRefusals = fast(
      new FastCounter({
        name: `${METRIC_PREFIX}service_refusals_total`,
        help: 'Requests answered 503 by the gateway without sending them, by target service and reason: overload (shed), circuit_open, maintenance',
        labelNames: ['service', 'reason'],
      }),
    );
    this.circuitTransitions = new Counter({
      name: `${METRIC_PREFIX}circuit_transitions_total`,
      help: "Changes of a service's circuit breaker, by service and the state it moved to (open, half-open, closed)",
      labelNames: ['service', 'state'],
      registers,
    });
    new Gauge({
      name: `${METRIC_PREFIX}contracts`,
      help: 'Contracts known (announced and not expired)',
      registers,
      collect() {
        this.set(counts.contracts());
      },
    });
    new Gauge({
      name: `${METRIC_PREFIX}services`,
      help: 'Services with at least one live instance',
      registers,
      collect() {
        this.set(counts.services());
      },
    });
    new Gauge({
      name: `${METRIC_PREFIX}service_instances`,
      help: 'Service instances holding a lease',
      registers,
      collect() {
        this.set(counts.instances());
      },
    });
  }

  requestStarted(): void {
    this.inFlightNow++;
  }

  /** One answered request. `route` is a template (bounded), never the raw path. */
  httpAnswered(route: string, method: string, status: number, seconds: number): void {
    this.inFlightNow--;
    const code = String(status);
    this.httpRequests.child(route, method, code).inc();
    this.httpDuration.child(route, method, code).observe(seconds);
  }

  /** An error answer with its code (from the error body). */
  errorAnswered(code: string, status: number, route: string): void {
    this.errorAnswers.child(code, String(status)).inc();
    if (status === 401 || status === 403) this.authFailures.child(code).inc();
    if (status === 429) this.rateLimited.child(route).inc();
  }

  busRoundTrip(service: string, outcome: BusOutcome, seconds: number): void {
    this.busDuration.child(service, outcome).observe(seconds);
  }

  busStateChanged(state: TransportState): void {
    for (const s of STATES) this.busState.set({ state: s }, s === state ? 1 : 0);
    const was = this.lastBusState;
    this.lastBusState = state;
    if (state !== 'up') return;
    // Unblocked is the same connection going on, not a reconnect.
    if (this.everUp && was !== 'blocked') this.reconnects.inc();
    this.everUp = true;
  }

  /** A reply for `service` (a service with a contract: bounded) that its broker user did not publish. */
  replyRefused(service: string): void {
    this.repliesRefused.child(service).inc();
  }

  /** A request to `service` (a service with a contract: bounded) answered 503 by the gateway itself. */
  serviceRefused(service: string, reason: RefusalReason): void {
    this.serviceRefusals.child(service, reason).inc();
  }

  circuitTransition(service: string, state: CircuitState): void {
    this.circuitTransitions.inc({ service, state });
  }

  announcement(outcome: 'accepted' | 'refused', reason: string): void {
    this.announcements.child(outcome, reason).inc();
  }

  breakingChange(outcome: 'accepted' | 'refused'): void {
    this.breakingChanges.inc({ outcome });
  }

  /** A request to a route of a deprecated contract (its message type is a served contract's: bounded). */
  deprecatedRequest(req: IncomingMessage, messageType: string): void {
    this.deprecatedRequests.child(this.routes.of(req), messageType).inc();
  }

  rateLimitStoreState(state: StoreState): void {
    this.storeUp.set(state === 'ok' ? 1 : 0);
  }

  rateLimitStoreFailure(reason: StoreFailure): void {
    this.storeFailures.inc({ reason });
  }

  rateLimitStoreBypass(outcome: 'allowed' | 'refused'): void {
    this.storeBypassed.inc({ outcome });
  }

  /** The scrape: in the Prometheus text format (0.0.4), or in OpenMetrics 1.0 when `openMetrics`. */
  async exposition(openMetrics = false): Promise<{ contentType: string; body: string }> {
    const registry: Registry<RegistryContentType> = openMetrics ? this.openMetricsRegistry() : this.registry;
    return { contentType: registry.contentType, body: await registry.metrics() };
  }

  /**
   * A registry that writes OpenMetrics, holding a view of each metric of the gateway's registry. prom-client strips
   * `_total` off a counter's `name` in place while writing OpenMetrics (to write the family's name without it), so the
   * gateway's own metrics are never handed to such a registry: a later Prometheus-format scrape would lose the suffix.
   */
  private openMetricsRegistry(): Registry<OpenMetricsContentType> {
    const open = new Registry<OpenMetricsContentType>();
    open.setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
    for (const metric of this.registry.getMetricsAsArray()) {
      open.registerMetric(openMetricsView(metric as unknown as Readable));
    }
    return open;
  }
}
