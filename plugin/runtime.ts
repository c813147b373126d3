import { createTransport } from './bus';
import type { Transport } from './bus/transport';
import type { Contract } from './contracts/types';
import type { Settings } from './settings';
import { consoleLogger, type Logger } from './logger';
import type { HostGatewayConfig } from './host/port';
import { warnIfDevelopmentMode } from './auth/dev-auth';
import { Observability } from './observability';
import { hostLogsStructured } from './host/logs';
import { redacting, structuredLogger } from './logging/structured';
import { RateLimitState } from './host/rate-limiters';
import { GracefulStop } from './shutdown/graceful-stop';
import { serviceBrokerUser } from './settings/bus-trust';
import { TimeoutCapLog } from './contracts/timeouts';
import { inert } from './log-once';
import { ServiceGuard } from './resilience/service-guard';
import { Discovery } from './parts/discovery';
import { RequestServices } from './parts/request-services';
import { HostSession } from './parts/host-session';
import { ApiDocuments } from './parts/documents';

/**
 * What lives as long as the gateway process, and the composition root: it makes the parts and wires them together,
 * in the constructor, in one order that can be read top to bottom (docs/design.md, "How init() puts it together"):
 * - `discovery` (plugin/parts/discovery.ts): the registry, the announcement inbox, the route plan, the leases, the
 *   discovery grace, and start(), which listens to the bus;
 * - `services` (plugin/parts/request-services.ts): what a request uses; the policies and the condition get it, each
 *   the fields it reads;
 * - `session` (plugin/parts/host-session.ts): the per-process attachment to the host: its config, the config
 *   writer, the pipeline refusal, the once-per-process hooks;
 * - `documents` (plugin/parts/documents.ts): the OpenAPI and AsyncAPI documents the operations routes serve;
 * - `observability` and `gracefulStop`, which the manifest hooks on the host's servers.
 * No part subscribes to another's events by itself: every listener is added here. The host re-runs init() on every
 * reload, so the process keeps one runtime (obtainRuntime); tests build their own with `new Runtime(settings, log)`
 * and close it.
 */
export class Runtime {
  readonly settings: Settings;
  readonly log: Logger;
  readonly startedAt = Date.now();
  readonly discovery: Discovery;
  readonly services: RequestServices;
  readonly session: HostSession;
  readonly documents: ApiDocuments;
  /** Prometheus metrics (with a metrics port) and what every request is observed by. */
  readonly observability: Observability;
  /** SIGTERM/SIGINT: drain the host's servers, answer what is left 503, then close this runtime. */
  readonly gracefulStop: GracefulStop;
  private readonly transport: Transport;
  private starting?: Promise<void>;

  constructor(settings: Settings, log: Logger = consoleLogger) {
    this.settings = settings;
    this.log = log;
    // 1. The bus, its requests guarded per service (load shedding, circuit breaker, maintenance: plugin/resilience/).
    const bus = createTransport({
      url: settings.busUrl,
      prefix: settings.busPrefix,
      logger: log,
      // Each service with a broker user of its own gets a queue of its own (fair intake); the rest share one.
      announcements: {
        maxBytes: settings.announcementLimits.maxBytes,
        bytesPerSecond: settings.announcementBytesPerSecond,
        services: Object.keys(settings.announcementUsers),
        others: settings.servicesFile === undefined,
      },
      // A reply counts only from the broker user that may announce for its service (read per reply: the settings
      // object is the one the trust settings live in).
      replies: {
        maxBytes: settings.maxReplyBytes,
        replyUser: (service) => serviceBrokerUser(this.settings, service),
        onRefusedReply: (service) => this.observability.metrics?.replyRefused(service),
      },
    });
    const serviceGuard = new ServiceGuard({
      maxInFlightPerService: settings.maxInFlightPerService,
      circuitFailureThreshold: settings.circuitFailureThreshold,
      circuitOpenSeconds: settings.circuitOpenSeconds,
      maintenance: (service) => registry.maintenance(service),
      log,
      metrics: () => this.observability.metrics,
    });
    const transport = serviceGuard.around(bus);
    this.transport = transport;
    // 2. Discovery: the registry, its inbox and the route plan (the plan follows the registry's changes first).
    this.discovery = new Discovery(settings, transport, log);
    const { registry, routes } = this.discovery;
    // 3. Metrics, following the bus's state and the registry's announcements; the rate limiters; the graceful stop.
    this.observability = new Observability(settings, registry, transport, log);
    const rateLimits = new RateLimitState({
      log,
      mode: settings.rateLimitOnStoreFailure,
      timeoutMs: settings.rateLimitStoreTimeoutMs,
      metrics: this.observability.metrics,
    });
    this.gracefulStop = new GracefulStop(
      () => this.transport,
      () => this.close(),
    );
    // 4. What a request uses.
    const services = new RequestServices({
      settings,
      log,
      transport,
      serviceGuard,
      registry,
      routes,
      discoveryGrace: this.discovery.grace,
      rateLimits,
      metrics: this.observability.metrics,
      stopping: this.gracefulStop,
    });
    this.services = services;
    // 5. The host session, and the documents, which read the config it holds.
    this.session = new HostSession({ settings, log, registry, routes, hostChanged: () => this.documents.refresh() });
    const session = this.session;
    this.documents = new ApiDocuments({
      settings,
      log,
      registry,
      routes,
      validators: services.validators,
      gatewayConfig: () => session.gatewayConfig(),
    });
    // 6. Who follows the registry, in this order (the config writer joins at the host's first attach, last).
    registry.on('change', (contracts: Contract[]) => services.deprecations.update(contracts));
    registry.on('maintenance', (service, retryAfterSeconds) => {
      if (retryAfterSeconds === undefined) log.info(`service ${inert(service)} is out of maintenance`);
      else
        log.warn(
          `service ${inert(service)} is in maintenance (every live instance says so): its routes answer 503 with Retry-After ${retryAfterSeconds}`,
        );
    });
    const capLog = new TimeoutCapLog(settings, (line) => this.log.warn(line));
    registry.on('change', (contracts: Contract[]) => capLog.contractsChanged(contracts));
    // Every contract is compiled as it is discovered, so a broken schema is logged then, not on its first request.
    services.validators.sync(registry.contracts());
    registry.on('change', (contracts) => services.validators.syncInSlices(contracts));
    this.documents.start();
  }

  /**
   * Opens the metrics port, connects, listens for announcements and asks every service to announce. Idempotent, and
   * it never rejects: a broker that is not there yet is retried until it is (requests meanwhile get 503).
   */
  start(): Promise<void> {
    if (!this.starting) {
      void this.observability.start();
      this.starting = this.discovery.start();
    }
    return this.starting;
  }

  /** Every init(): the host's config as it loaded it now; the rate limiters take the host's store client. */
  attachHost(host: HostGatewayConfig): void {
    this.services.rateLimits.attachHost();
    this.session.attach(host);
  }

  async close(): Promise<void> {
    this.documents.stop();
    this.session.stop();
    this.discovery.stop();
    this.services.rateLimits.close();
    this.services.validators.stop();
    await this.transport.close();
    await this.observability.close();
  }
}

// The one process-wide handle: the host re-runs init() on every reload, and the launcher (scripts/start.ts) may load
// this module from another path than the host does, so a module-level variable could be two; a registered symbol is one.
const KEY = Symbol.for('express-gateway-plugin-contracts.runtime');
type Holder = { [KEY]?: Runtime };

/**
 * The process's runtime, created on first use with the given settings (a later call, such as the init() of a
 * reload, gets the same one). The settings hold the authentication settings, checked when they were resolved (a short
 * JWT_SECRET stops the start there, with the setting named); creating it warns about development mode.
 */
export function obtainRuntime(settings: Settings, log: Logger = consoleLogger): Runtime {
  const g = globalThis as Holder;
  if (!g[KEY]) {
    // LOG_FORMAT=json or ecs: the plugin's lines and the host's as one JSON object per line; either way redacted.
    const format = settings.logFormat;
    if (format !== 'text') hostLogsStructured(format);
    const logger = format !== 'text' ? structuredLogger(format) : redacting(log);
    warnIfDevelopmentMode(logger);
    g[KEY] = new Runtime(settings, logger);
  }
  return g[KEY];
}

/** The process's runtime if one was made (manifest.init() asks, to tell a reload from the first start). */
export function currentRuntime(): Runtime | undefined {
  return (globalThis as Holder)[KEY];
}
