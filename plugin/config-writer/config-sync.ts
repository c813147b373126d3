import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { ContractRegistry } from '../contracts/registry';
import type { Conflict, EndpointSpec } from '../contracts/endpoint-specs';
import type { RoutePlan } from '../contracts/route-plan';
import {
  generatedPipeline,
  isContractEndpoint,
  preflightEndpoint,
  tableEndpoint,
} from '../pipeline/generated-pipeline';
import { GENERATED_POLICIES, POLICY_NAMES } from '../policy-names';
import { routeAction } from '../routing/route-action';
import { unfitPaths } from '../routing/path-table';
import { wantsTable } from '../routing/routing-mode';
import { corsAction } from '../edge/cors';
import type { Settings } from '../settings';
import type { Logger } from '../logger';
import { renderGatewayConfig } from './gateway-config';
import { writeIfChanged } from './atomic-file';
import { isCatchAll, notFoundEndpoint, notFoundPolicies } from './not-found-endpoint';
import { errorMessage } from '../errors/describe';
import { systemClock, type Clock, type ClockTimer } from '../clock';
import type { HostGatewayConfig } from '../host/port';

export interface ConfigSyncOptions {
  /** Time and timers of the write pacing; the system's by default. */
  clock?: Clock;
  /** The runtime's route plan: the routes it writes. */
  routes: RoutePlan;
}

/**
 * Keeps gateway.config.yml in step with the registry. The first write is synchronous (the host's init() is),
 * later ones follow registry changes, debounced. A write happens only when the text changes, because every
 * reload of the host re-runs init() and an unconditional write would reload forever.
 */
export class ConfigSync {
  private timer?: ClockTimer;
  private lastConflicts = '';
  private lastUnfit = '';
  private lastTable?: boolean;
  /** The last render, reused while neither the routes nor the file changed. */
  private lastRender?: { key: string; current: string; text: string };
  private writing: Promise<void> = Promise.resolve();
  /**
   * Writes (each a host reload) are at least configWriteIntervalMs apart, and the pause after one is at least four
   * times what it took, so rewrites never take more than about a fifth of the gateway's time.
   */
  private nextWriteAt = 0;
  private readonly onChange = () => this.schedule();
  private readonly clock: Clock;
  private readonly routes: RoutePlan;

  constructor(
    private readonly registry: ContractRegistry,
    private host: HostGatewayConfig,
    private readonly settings: Settings,
    private readonly log: Logger,
    options: ConfigSyncOptions,
  ) {
    this.clock = options.clock ?? systemClock;
    this.routes = options.routes;
  }

  start(): void {
    this.registry.on('change', this.onChange);
    this.writeSync();
  }

  /** Each init() (the host's reload) hands on a port of its own, made from the context the host gave it. */
  updateHost(host: HostGatewayConfig): void {
    this.host = host;
    this.writeSync();
  }

  stop(): void {
    this.registry.off('change', this.onChange);
    if (this.timer) this.clock.clearTimeout(this.timer);
  }

  /** Resolves when every write scheduled so far is done (tests and the launcher use it). */
  async settled(): Promise<void> {
    while (this.timer) await new Promise((r) => setTimeout(r, this.settings.writeDebounceMs || 1));
    await this.writing;
  }

  private path(): string | undefined {
    return this.host.gatewayConfigPath();
  }

  private render(current: string): string {
    const table = this.routes.routes();
    this.report(table.conflicts);
    const cors = corsAction(this.settings);
    const prefix = this.settings.generatedPrefix;
    // The preflight endpoint first: it must precede any catch-all endpoint for /api paths.
    // The not-found catch-all last: after it nothing under /api could be reached.
    const useTable = this.useTable(table.endpoints);
    const routes = useTable
      ? [
          tableEndpoint(
            prefix,
            table.endpoints.map((e) => e.path),
          ),
        ]
      : table.endpoints;
    const endpoints = [preflightEndpoint(prefix), ...routes, notFoundEndpoint(prefix)];
    // Contracts often change without their routes (new schemas, a new instance): then the file would not change.
    const key = JSON.stringify([useTable, routes]);
    if (this.lastRender?.key === key && this.lastRender.current === current) return this.lastRender.text;
    // Every contract route runs one shared pipeline; its route (`contract:`) is written on its apiEndpoint entry.
    const shared = `${prefix}routes`;
    const text = renderGatewayConfig(current, endpoints, {
      prefix,
      pipelineOf: (endpoint) => (isContractEndpoint(endpoint) ? shared : endpoint.name),
      endpointExtra: (endpoint) => (isContractEndpoint(endpoint) ? { contract: routeAction(endpoint) } : undefined),
      pipelinePolicies: (endpoint) => (isCatchAll(endpoint) ? notFoundPolicies() : generatedPipeline(endpoint, cors)),
      requiredPolicyNames: [
        ...(useTable ? [POLICY_NAMES.routeTable] : []),
        ...GENERATED_POLICIES,
        POLICY_NAMES.notFound,
      ],
    });
    this.lastRender = { key, current, text };
    return text;
  }

  /**
   * `routing: table`, or `auto` with more routes than AUTO_TABLE_ABOVE, unless a route's path is one the plugin's
   * path table cannot match as Express would (an explicit `http.paths` with a pattern): then every route gets its
   * endpoint, and the log says which path is why.
   */
  private useTable(endpoints: readonly EndpointSpec[]): boolean {
    const mode = this.settings.routing;
    let use = wantsTable(mode, endpoints.length);
    if (use) {
      const unfit = unfitPaths(endpoints).join(', ');
      if (unfit !== this.lastUnfit) {
        if (unfit)
          this.log.warn(
            `routing: table cannot hold ${unfit}; one apiEndpoint per route is written instead until that path goes`,
          );
        else if (this.lastUnfit) this.log.info('routing: table is in use again');
      }
      this.lastUnfit = unfit;
      use = unfit === '';
    }
    // Auto's switch is worth a line: ops see gateway.config.yml change shape.
    if (mode === 'auto' && this.lastTable !== undefined && use !== this.lastTable) {
      this.log.info(
        use
          ? `routing: auto: ${endpoints.length} routes, one apiEndpoint for all of them (the plugin's path table) from now on`
          : `routing: auto: ${endpoints.length} routes, one apiEndpoint per route again`,
      );
    }
    this.lastTable = use;
    return use;
  }

  /** At init: write and make the host read the file now, so start-up serves the routes already known. */
  private writeSync(): void {
    const path = this.path();
    if (!path) return;
    try {
      if (writeIfChanged(path, this.render(readFileSync(path, 'utf8')))) {
        this.host.readGatewayConfig();
        this.log.info(`routes written to ${path}`);
      }
    } catch (err) {
      this.log.error(`could not write generated routes to ${path}: ${errorMessage(err)}`);
    }
  }

  /**
   * A burst of changes makes one write: a write already scheduled is kept (it renders the registry as it is then),
   * and writes are spaced by configWriteIntervalMs, so a flood of changes reloads the host at a bounded rate.
   */
  private schedule(): void {
    if (this.timer) return;
    this.timer = this.clock.setTimeout(
      () => {
        this.timer = undefined;
        const started = this.clock.now();
        this.writing = this.writing
          .then(() => this.writeAsync())
          .finally(() => {
            const now = this.clock.now();
            this.nextWriteAt = now + Math.max(this.settings.configWriteIntervalMs ?? 0, (now - started) * 4);
          });
      },
      Math.max(this.settings.writeDebounceMs, this.nextWriteAt - this.clock.now()),
    );
    this.timer.unref();
  }

  /**
   * After start-up: write, then reload the host ourselves instead of waiting for its file watcher
   * (which takes ~2 s and may be disabled with EG_DISABLE_CONFIG_WATCH).
   */
  private async writeAsync(): Promise<void> {
    const path = this.path();
    if (!path) return;
    try {
      if (writeIfChanged(path, this.render(await readFile(path, 'utf8')))) {
        this.host.reloadGateway();
        this.log.info(`routes updated in ${path}`);
      }
    } catch (err) {
      this.log.error(`could not write generated routes to ${path}: ${errorMessage(err)}`);
    }
  }

  private report(conflicts: Conflict[]): void {
    const text = conflicts
      .map(
        (c) =>
          `${c.method} ${c.path}${c.whenQuery ? `?${c.whenQuery}` : ''}: ${c.messageTypes.join(', ')} (${c.reason})`,
      )
      .join('; ');
    if (text && text !== this.lastConflicts) this.log.warn(`route conflicts, first contract kept: ${text}`);
    this.lastConflicts = text;
  }
}
