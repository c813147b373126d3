import { leaseHold } from './contracts/lease-hold';
import type { Announcement, Contract } from './contracts/types';
import { FirstUsePins } from './contracts/first-use';
import { ContractRegistry } from './contracts/registry';
import { AnnouncementInbox } from './contracts/inbox';
import { createTransport } from './bus';
import type { Transport } from './bus/transport';
import type { Settings } from './settings';
import { consoleLogger, type Logger } from './logger';
import { ConfigSync } from './config-writer/config-sync';
import type { HostGatewayConfig } from './host/port';
import { warnIfDevelopmentMode } from './auth/dev-auth';
import { startWithRetry } from './bus/start-with-retry';
import { errorMessage } from './errors/describe';
import { Observability } from './observability';
import { hostLogsStructured } from './host/logs';
import { redacting, structuredLogger } from './logging/structured';
import { TokenVerifiers } from './auth/verifiers';
import { ValidatorCache } from './validation/validator-cache';
import { pathTableOf } from './routing/table-match';
import { RoutePlan, type PlannedRoutes } from './contracts/route-plan';
import type { PathTable } from './routing/path-table';
import type { RouteAction } from './pipeline/resolve-contract';
import { OpenApiCache } from './openapi/cache';
import { AsyncApiCache } from './asyncapi/cache';
import { handWrittenRoutes, routedMessageTypes } from './openapi/hand-written';
import { RateLimitState } from './host/rate-limiters';
import { GracefulStop } from './shutdown/graceful-stop';
import { DiscoveryGrace } from './contracts/discovery-grace';
import { serviceBrokerUser } from './settings/bus-trust';
import { TimeoutCapLog } from './contracts/timeouts';
import { Deprecations } from './compat/deprecation';
import { POLICY_NAMES } from './policy-names';
import { OutputSamples } from './validation/output';
import { ReplyWarnings } from './contracts/reply-warnings';
import { SuccessStatuses } from './contracts/success-status';
import { inert } from './log-once';
import { ServiceGuard } from './resilience/service-guard';

/**
 * What lives as long as the gateway process, and the composition root: manifest.init() hands it to every policy,
 * condition and operations route it registers. It owns the bus, the registry of discovered contracts, the config
 * sync, and what the steps share across requests and reloads: token verifiers, validators, the path table, the
 * OpenAPI document, rate limiters and the graceful stop. The host re-runs init() on every reload, so the process
 * keeps one (obtainRuntime); tests build their own with `new Runtime(settings, log)` and close it.
 */
export class Runtime {
  /** The bus, its requests guarded per service (load shedding, circuit breaker, maintenance: plugin/resilience/). */
  readonly transport: Transport;
  readonly serviceGuard: ServiceGuard;
  readonly registry: ContractRegistry;
  /** Announcements reach the registry through it: in batches, checked against their broker user. */
  readonly inbox: AnnouncementInbox;
  readonly settings: Settings;
  readonly log: Logger;
  /** Prometheus metrics (with a metrics port) and what every request is observed by. */
  readonly observability: Observability;
  readonly startedAt = Date.now();
  /** One token verifier per auth configuration, shared by every jwt-dev-auth step, contract-rate-limit and discovery. */
  readonly verifiers = new TokenVerifiers();
  /** contract-rate-limit's limiters and the health of their store, kept across reloads. */
  readonly rateLimits: RateLimitState;
  /** After a start or reconnect: until the services have had time to announce, an unknown route is 503, not 404. */
  readonly discoveryGrace: DiscoveryGrace;
  /** SIGTERM/SIGINT: drain the host's servers, answer what is left 503, then close this runtime. */
  readonly gracefulStop: GracefulStop;
  /** The Deprecation and Sunset headers of deprecated contracts' routes, kept in step with the registry. */
  readonly deprecations = new Deprecations();
  /** contract-router's memory of replies: outputs that matched their schema, problems already logged, route kinds. */
  readonly outputSamples = new OutputSamples();
  readonly replyWarnings = new ReplyWarnings();
  readonly successStatuses = new SuccessStatuses();
  /**
   * Set by the first init(), which registers the gateway routes (/health, /api-docs, …) and hooks the host's servers
   * (observer, graceful stop, listen errors). The host re-runs init() on every reload and replays every registered
   * gateway route on the same express app, so each of these is done once per process.
   */
  hostHooked = false;
  /** The routes of the contracts known now, derived once per change: for the config writer, path table, documents. */
  readonly routes: RoutePlan;
  private validatorCache?: ValidatorCache;
  /** The path table, and the plan it was built from. */
  private table?: { of: PlannedRoutes; paths: PathTable<RouteAction> };
  private openApiCache?: OpenApiCache;
  private asyncApiCache?: AsyncApiCache;
  private sync?: ConfigSync;
  private host?: HostGatewayConfig;
  private lastUnrouted = '';
  private starting?: Promise<void>;
  /** Set once announcements are listened to: a discovery request before then starts no grace. */
  private listening = false;
  private closed = false;
  /** Set once the host has loaded the plugin (a plugin load error is only logged by the host). */
  hostAttached = false;
  /** Trust on first use (without a services file): who first held each message type. */
  readonly firstUse: FirstUsePins | undefined;
  /**
   * Set by an init() whose gateway config would let a request through unchecked (plugin/host/config-check.ts): the
   * plugin's policy factories refuse while it is, so the host keeps the routes it had. Cleared by a good init().
   */
  pipelineRefusal?: string;

  constructor(settings: Settings, log: Logger = consoleLogger) {
    this.settings = settings;
    this.log = log;
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
    this.serviceGuard = new ServiceGuard({
      maxInFlightPerService: settings.maxInFlightPerService,
      circuitFailureThreshold: settings.circuitFailureThreshold,
      circuitOpenSeconds: settings.circuitOpenSeconds,
      maintenance: (service) => this.registry.maintenance(service),
      log,
      metrics: () => this.observability.metrics,
    });
    this.transport = this.serviceGuard.around(bus);
    this.discoveryGrace = new DiscoveryGrace(settings.discoveryGraceMs);
    if (settings.firstUse) {
      this.firstUse = new FirstUsePins(settings.firstUse.file, log);
      if (settings.firstUse.file === undefined)
        log.warn(
          'first-use pins: no data folder (dataDir, DATA_DIR or EG_CONFIG_DIR), so they are lost when the gateway stops',
        );
    }
    this.registry = new ContractRegistry({
      logger: log,
      rules: settings.ownership,
      limits: settings.announcementLimits,
      maxLeaseMs: settings.maxLeaseMs,
      budget: settings.retainedBudget,
      breakingChanges: settings.breakingChanges,
      ...(this.firstUse ? { firstUse: this.firstUse } : {}),
    });
    this.routes = RoutePlan.forSettings(this.registry, settings);
    this.inbox = new AnnouncementInbox(this.registry, {
      intervalMs: settings.announcementApplyIntervalMs,
      announcers: {
        users: settings.announcementUsers,
        required: settings.requireAnnouncementUser,
        listedOnly: settings.servicesFile !== undefined,
      },
      pendingBudget: settings.retainedBudget,
      logger: log,
    });
    this.observability = new Observability(settings, this.registry, this.transport, log);
    this.rateLimits = new RateLimitState({
      log,
      mode: settings.rateLimitOnStoreFailure,
      timeoutMs: settings.rateLimitStoreTimeoutMs,
      metrics: this.observability.metrics,
    });
    this.gracefulStop = new GracefulStop(
      () => this.transport,
      () => this.close(),
    );
    this.registry.on('change', (contracts: Contract[]) => this.deprecations.update(contracts));
    this.registry.on('maintenance', (service, retryAfterSeconds) => {
      if (retryAfterSeconds === undefined) log.info(`service ${inert(service)} is out of maintenance`);
      else
        log.warn(
          `service ${inert(service)} is in maintenance (every live instance says so): its routes answer 503 with Retry-After ${retryAfterSeconds}`,
        );
    });
    const capLog = new TimeoutCapLog(settings, (line) => this.log.warn(line));
    this.registry.on('change', (contracts: Contract[]) => capLog.contractsChanged(contracts));
  }

  /**
   * The validators of the discovered contracts, bound to the registry on first use (schema-validation's creation):
   * every contract known then is compiled, and each change as it is discovered, so a broken schema is logged then.
   */
  get validators(): ValidatorCache {
    if (!this.validatorCache) {
      const cache = new ValidatorCache({ log: this.log });
      this.validatorCache = cache;
      cache.sync(this.registry.contracts());
      this.registry.on('change', (contracts) => cache.syncInSlices(contracts));
    }
    return this.validatorCache;
  }

  /**
   * The path table of `routing: table`, from the contracts known now (not from gateway.config.yml, which the host
   * reloads later): a contract announced is routed from its next request on.
   */
  pathTable(): PathTable<RouteAction> {
    // Rebuilt on the first request after a change: when the route plan is a new one.
    const plan = this.routes.routes();
    if (this.table?.of !== plan) this.table = { of: plan, paths: pathTableOf(plan.endpoints) };
    return this.table.paths;
  }

  /** The OpenAPI document, built on first use and then on every change of the contracts (never per request). */
  get openApi(): OpenApiCache {
    this.openApiCache ??= new OpenApiCache(
      this.registry,
      () => ({
        handWritten: handWrittenRoutes(this.host?.gatewayConfig(), this.settings.generatedPrefix),
        debugEndpoints: this.settings.debugEndpoints,
        rateLimited: this.settings.rateLimitMax !== undefined,
        publicRateLimited: this.settings.publicRateLimitMax !== undefined,
        developmentAuth: this.settings.auth.developmentAuthEnabled,
        routes: this.routes.routes(),
        // The validators schema-validation uses: an example is what the route accepts, compiled once.
        checkInput: (contract, input) => {
          const compiled = this.validators.validator(contract, 'input');
          return compiled.ok && compiled.validate(structuredClone(input)) === true;
        },
      }),
      this.log,
    ).start();
    return this.openApiCache;
  }

  /** The AsyncAPI document of the bus, built on the first request after the contracts changed. */
  get asyncApi(): AsyncApiCache {
    this.asyncApiCache ??= new AsyncApiCache(this.registry, () => ({
      prefix: this.settings.busPrefix,
      url: this.settings.busUrl,
    })).start();
    return this.asyncApiCache;
  }

  /**
   * Connects, listens for announcements and asks every service to announce. Idempotent, and it never
   * rejects: a broker that is not there yet is retried until it is (requests meanwhile get 503).
   */
  start(): Promise<void> {
    this.starting ??= this.connect();
    return this.starting;
  }

  private async connect(): Promise<void> {
    void this.observability.start();
    this.transport.onStateChange((state) => {
      // The transport logs the change itself; after a reconnect every service re-announces, so routes come back without a restart.
      if (state !== 'up') this.discoveryGrace.lost();
      else if (this.listening) {
        // Renewals sent while the gateway could not hear them were lost: every instance gets a whole lease to be
        // heard again, so no route goes because the bus was down, blocked or moving to another node.
        this.registry.renewLeases();
        void this.askForAnnouncements();
      }
    });
    if (!(await startWithRetry(this.transport, this.log, () => this.closed))) return;
    this.warnIfUnauthenticated();
    await this.transport.onAnnouncement((a: Announcement, origin) => this.inbox.offer(a, origin));
    this.listening = true;
    // No lease runs out while the gateway cannot hear renewals (its bus not up, its announcement listener refused),
    // nor during the grace after.
    this.registry.startExpiry(
      this.settings.leaseCheckIntervalMs,
      leaseHold(
        () => this.transport.state() === 'up' && (this.transport.hearsAnnouncements?.() ?? true),
        () => this.discoveryGrace.remainingMs(),
        // Services renew every third of a lease: a whole lease from now is time enough to be heard again.
        () => this.registry.renewLeases(),
      ),
    );
    await this.askForAnnouncements();
  }

  /**
   * Asks every service to announce, and starts the discovery grace. It starts even when the request fails: services
   * also re-announce on their own, every third of their lease.
   */
  private async askForAnnouncements(): Promise<void> {
    try {
      await this.transport.requestDiscovery();
    } catch (e) {
      this.log.warn(`discovery request failed: ${errorMessage(e)}`);
    } finally {
      if (this.transport.state() === 'up') this.discoveryGrace.asked();
    }
  }

  /**
   * Once, at start, one line: on a broker, a credential others share (guest, the user of an announcing service, or
   * no required broker users at all) leaves announcements and requests open to whoever else holds it.
   */
  private warnIfUnauthenticated(): void {
    const { requireAnnouncementUser, announcementUsers } = this.settings;
    if (this.transport.kind !== 'amqp') return;
    // The user the transport logs in as (amqplib's default without one: guest).
    const user = this.transport.brokerUser ?? 'guest';
    const sharedWith = Object.keys(announcementUsers).find((service) => announcementUsers[service] === user);
    const open: string[] = [];
    if (!requireAnnouncementUser) {
      const pinned = Object.keys(announcementUsers).length;
      open.push(
        `announcements are unauthenticated: any client of the broker may announce contracts${pinned ? ` for services other than the ${pinned} in announcementUsers` : ''}`,
      );
    }
    if (user === 'guest')
      open.push(
        'the gateway connects as guest, a shared credential: whoever else uses it may publish requests to every service and read announcements',
      );
    else if (sharedWith !== undefined)
      open.push(`the gateway's broker user ${user} is also ${sharedWith}'s: that service may act as the gateway`);
    if (open.length === 0) return;
    this.log.warn(
      `${open.join('; ')}; use per-service broker users and requireAnnouncementUser (docs/operations.md, "Trust on the bus")`,
    );
  }

  /** Binds the host's config so discovered routes are written into gateway.config.yml. */
  attachHost(host: HostGatewayConfig): void {
    this.hostAttached = true;
    this.rateLimits.attachHost();
    this.host = host;
    // A reload may have changed the hand-written pipelines the OpenAPI document lists.
    this.openApiCache?.refresh();
    this.asyncApiCache?.refresh();
    this.warnUnroutedExclusions(host.gatewayConfig());
    if (!this.settings.writeConfig) return;
    if (!this.sync) {
      this.sync = new ConfigSync(this.registry, host, this.settings, this.log, { routes: this.routes });
      this.sync.start();
    } else {
      this.sync.updateHost(host);
    }
  }

  /**
   * An excluded message type that no hand-written contract-router names is reachable nowhere, and a misspelt one
   * leaves the real contract on its generated routes: either is worth a line, once per config that shows it.
   */
  private warnUnroutedExclusions(gatewayConfig: unknown): void {
    const routed = routedMessageTypes(gatewayConfig, this.settings.generatedPrefix);
    const unrouted = this.settings.excludeFromGeneratedRoutes.filter((t) => !routed.has(t)).join(', ');
    if (unrouted && unrouted !== this.lastUnrouted) {
      this.log.warn(
        `excludeFromGeneratedRoutes: no hand-written pipeline's ${POLICY_NAMES.contractRouter} names ${unrouted}; nothing serves it (is the name right?)`,
      );
    }
    this.lastUnrouted = unrouted;
  }

  contract(messageType: string): Contract | undefined {
    return this.registry.get(messageType);
  }

  /** Resolves when the routes known now are in gateway.config.yml. */
  async routesWritten(): Promise<void> {
    await this.sync?.settled();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.openApiCache?.stop();
    this.asyncApiCache?.stop();
    this.sync?.stop();
    this.routes.stop();
    this.inbox.stop();
    this.registry.stop();
    this.firstUse?.close();
    this.rateLimits.close();
    this.validatorCache?.stop();
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
