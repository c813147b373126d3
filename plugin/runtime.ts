import type { Announcement, Contract } from './contracts/types';
import { ContractRegistry } from './contracts/registry';
import { AnnouncementInbox } from './contracts/inbox';
import { createTransport, type Transport } from './bus';
import type { Settings } from './settings';
import { consoleLogger, type Logger } from './logger';
import { ConfigSync, type HostConfig } from './config-writer/config-sync';
import { checkAuthConfig, warnIfDevelopmentMode } from './auth';
import { GatewayError } from './errors';
import { startWithRetry } from './bus/start-with-retry';
import { Observability } from './observability';
import { hostLogsAsJson } from './logging/host-logs';
import { jsonLogger, redacting } from './logging/structured';
import { GracefulStop } from './shutdown/graceful-stop';

/**
 * What lives as long as the gateway process: the bus, the registry of discovered contracts and the
 * config sync. The host re-runs the plugin's init() on every reload, so this is created once and found
 * again by every later init() (and by the launcher, which may start it before the host).
 */
export class Runtime {
  readonly transport: Transport;
  readonly registry: ContractRegistry;
  /** Announcements reach the registry through it: in batches, checked against their broker user. */
  readonly inbox: AnnouncementInbox;
  readonly settings: Settings;
  readonly log: Logger;
  /** Prometheus metrics (with a metrics port) and what every request is observed by. */
  readonly observability: Observability;
  readonly startedAt = Date.now();
  /** SIGTERM/SIGINT: drain the host's servers, answer what is left 503, then close this runtime. */
  readonly gracefulStop: GracefulStop;
  /** Set by the first init(), which hooks the host's servers (observer, graceful stop, listen errors): once per process. */
  hostHooked = false;
  private sync?: ConfigSync;
  private starting?: Promise<void>;
  private closed = false;
  /** Set once the host has loaded the plugin (a plugin load error is only logged by the host). */
  hostAttached = false;
  /**
   * Set by the first init() that registers the gateway routes (/health, /api-docs, …). The host re-runs init()
   * on every reload and replays every registered gateway route on the same express app, so later inits skip it.
   */
  gatewayRoutesRegistered = false;

  constructor(settings: Settings, log: Logger = consoleLogger) {
    this.settings = settings;
    this.log = log;
    this.transport = createTransport({
      url: settings.busUrl,
      prefix: settings.busPrefix,
      logger: log,
      announcements: { maxBytes: settings.announcementLimits.maxBytes, bytesPerSecond: settings.announcementBytesPerSecond },
    });
    this.registry = new ContractRegistry({ logger: log, rules: settings.ownership, limits: settings.announcementLimits });
    this.inbox = new AnnouncementInbox(this.registry, {
      intervalMs: settings.announcementApplyIntervalMs,
      announcers: { users: settings.announcementUsers, required: settings.requireAnnouncementUser },
      logger: log,
    });
    this.observability = new Observability(settings, this.registry, this.transport, log);
    this.gracefulStop = new GracefulStop(() => this.transport, () => this.close());
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
      if (state === 'up') this.transport.requestDiscovery().catch((e) => this.log.warn(`discovery request failed: ${String(e)}`));
    });
    if (!(await startWithRetry(this.transport, this.log, () => this.closed))) return;
    this.warnIfUnauthenticated();
    await this.transport.onAnnouncement((a: Announcement, origin) => this.inbox.offer(a, origin));
    this.registry.startExpiry(this.settings.leaseCheckIntervalMs);
    await this.transport.requestDiscovery();
  }

  /** Once, at start: on a broker, without required broker users, whoever can publish there can announce. */
  private warnIfUnauthenticated(): void {
    const { requireAnnouncementUser, announcementUsers } = this.settings;
    if (this.transport.kind !== 'amqp' || requireAnnouncementUser) return;
    const pinned = Object.keys(announcementUsers).length;
    this.log.warn(
      `announcements are unauthenticated: any client of the broker may announce contracts${pinned ? ` for services other than the ${pinned} in announcementUsers` : ''}; ` +
        'use per-service broker users and requireAnnouncementUser (docs/operations.md, "Trust on the bus")',
    );
  }

  /** Binds the host's config so discovered routes are written into gateway.config.yml. */
  attachHost(host: HostConfig): void {
    this.hostAttached = true;
    if (!this.settings.writeConfig) return;
    if (!this.sync) {
      this.sync = new ConfigSync(this.registry, host, this.settings, this.log);
      this.sync.start();
    } else {
      this.sync.updateHost(host);
    }
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
    this.sync?.stop();
    this.inbox.stop();
    this.registry.stop();
    await this.transport.close();
    await this.observability.close();
  }
}

const KEY = Symbol.for('express-gateway-plugin-contracts.runtime');
type Holder = { [KEY]?: Runtime };

/**
 * The process's runtime, created on first use with the given settings. Creating it checks the authentication
 * settings (a short JWT_SECRET stops the start here, with the setting named) and warns about development mode.
 */
export function obtainRuntime(settings: Settings, log: Logger = consoleLogger): Runtime {
  const g = globalThis as Holder;
  if (!g[KEY]) {
    checkAuthConfig();
    // LOG_FORMAT=json: the plugin's lines and the host's as one JSON object per line; either way redacted.
    if (settings.logFormat === 'json') hostLogsAsJson();
    const logger = settings.logFormat === 'json' ? jsonLogger : redacting(log);
    warnIfDevelopmentMode(logger);
    g[KEY] = new Runtime(settings, logger);
  }
  return g[KEY];
}

export function currentRuntime(): Runtime | undefined {
  return (globalThis as Holder)[KEY];
}

/** 503 SERVICE_UNAVAILABLE for a request that arrives before the plugin has started its runtime. */
export function gatewayStarting(): GatewayError {
  return new GatewayError('SERVICE_UNAVAILABLE', 'The gateway is starting', { status: 503 });
}

/** The runtime a request needs; throws gatewayStarting() while there is none. */
export function startedRuntime(): Runtime {
  const runtime = currentRuntime();
  if (!runtime) throw gatewayStarting();
  return runtime;
}
