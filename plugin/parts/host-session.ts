import type { ContractRegistry } from '../contracts/registry';
import type { RoutePlan } from '../contracts/route-plan';
import type { Settings } from '../settings';
import type { Logger } from '../logger';
import { ConfigSync } from '../config-writer/config-sync';
import type { HostGatewayConfig } from '../host/port';
import type { RefusalHolder } from '../host/config-check';
import { routedMessageTypes } from '../openapi/hand-written';
import { POLICY_NAMES } from '../policy-names';

/** What the host session is made from: the parts plugin/runtime.ts made before it. */
export interface HostSessionParts {
  readonly settings: Settings;
  readonly log: Logger;
  readonly registry: ContractRegistry;
  readonly routes: RoutePlan;
  /** Runs on every attach, before the config writer: what reads the host's config reads it again. */
  readonly hostChanged: () => void;
}

/**
 * The plugin's attachment to the host, once per process: the host re-runs init() on every reload, and each hands
 * the session its config again (attach). It owns the host's config as last loaded, the config writer that keeps
 * gateway.config.yml in step with the registry, the refusal of a config that would let a request through unchecked,
 * and whether the once-per-process hooks on the host's servers are done.
 */
export class HostSession implements RefusalHolder {
  readonly settings: Settings;
  readonly log: Logger;
  private host?: HostGatewayConfig;
  private sync?: ConfigSync;
  private refusal?: string;
  private hooked = false;
  private lastUnrouted = '';

  constructor(private readonly parts: HostSessionParts) {
    this.settings = parts.settings;
    this.log = parts.log;
  }

  /** True once the host has loaded the plugin (a plugin load error is only logged by the host). */
  get hostAttached(): boolean {
    return this.host !== undefined;
  }

  /** The gateway config as the host last loaded it (undefined before the host is attached). */
  gatewayConfig(): unknown {
    return this.host?.gatewayConfig();
  }

  /**
   * Set by an init() whose gateway config would let a request through unchecked (plugin/host/config-check.ts): the
   * plugin's policy factories refuse while it is, so the host keeps the routes it had. Cleared by a good init().
   */
  refusePipelines(problem: string | undefined): void {
    this.refusal = problem;
  }

  pipelineRefusal(): string | undefined {
    return this.refusal;
  }

  /**
   * True on the first call of the process only: the first init() registers the gateway routes (/health, /api-docs, …)
   * and hooks the host's servers (observer, graceful stop, listen errors). The host re-runs init() on every reload
   * and replays every registered gateway route on the same express app, so each of these is done once per process.
   */
  firstHooking(): boolean {
    if (this.hooked) return false;
    this.hooked = true;
    return true;
  }

  /** Binds the host's config so discovered routes are written into gateway.config.yml. */
  attach(host: HostGatewayConfig): void {
    this.host = host;
    // A reload may have changed the hand-written pipelines the OpenAPI document lists.
    this.parts.hostChanged();
    this.warnUnroutedExclusions(host.gatewayConfig());
    if (!this.settings.writeConfig) return;
    if (!this.sync) {
      this.sync = new ConfigSync(this.parts.registry, host, this.settings, this.log, { routes: this.parts.routes });
      // The config writer follows the registry from the first attach on: it needs the host to write to.
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

  /** Resolves when the routes known now are in gateway.config.yml. */
  async routesWritten(): Promise<void> {
    await this.sync?.settled();
  }

  stop(): void {
    this.sync?.stop();
  }
}
