import type { Server } from 'node:http';
import type { ContractRegistry } from '../contracts/registry';
import type { Transport } from '../bus/transport';
import type { Settings } from '../settings';
import type { Logger } from '../logger';
import { errorMessage } from '../errors/describe';
import { GatewayMetrics } from './metrics';
import { startMetricsServer } from './metrics-server';
import { refusalKind } from './refusals';
import { RequestObserver } from './request-observer';
import { accessLog } from '../logging/access-log';

/**
 * Metrics and the access log of one gateway process: made by the runtime with the registry and the bus it watches.
 * Without a metrics port nothing is counted (no cost on the request path).
 */
export class Observability {
  readonly metrics?: GatewayMetrics;
  /** What the host's servers hand every request to (plugin/host/servers.ts). */
  readonly observer = new RequestObserver();
  private server?: Promise<Server | undefined>;

  constructor(
    private readonly settings: Settings,
    registry: ContractRegistry,
    transport: Transport,
    private readonly log: Logger,
  ) {
    const access = settings.accessLog ? accessLog(settings.logFormat, log) : undefined;
    this.observer.setOptions(access ? { accessLog: access } : {});
    if (settings.metricsPort === undefined) return;
    const metrics = new GatewayMetrics(
      {
        contracts: () => registry.counts().contracts,
        services: () => registry.counts().services,
        instances: () => registry.counts().instances,
      },
      this.observer.labels,
      () => transport.node?.(),
      settings.metricsNaming,
    );
    this.metrics = metrics;
    metrics.busStateChanged(transport.state());
    transport.onStateChange((state) => metrics.busStateChanged(state));
    registry.on('breaking', (change) => metrics.breakingChange(change.outcome));
    registry.on('announcement', (result) =>
      metrics.announcement(result.accepted ? 'accepted' : 'refused', result.accepted ? '' : refusalKind(result.reason)),
    );
    this.observer.setOptions(access ? { metrics, accessLog: access } : { metrics });
  }

  /** Opens the metrics port. A port that cannot be opened is logged; the gateway serves its API anyway. */
  start(): Promise<unknown> {
    const { metrics, settings } = this;
    if (!metrics || settings.metricsPort === undefined) return Promise.resolve();
    this.server ??= startMetricsServer(metrics, settings.metricsPort, settings.metricsHost, this.log).catch((err) => {
      this.log.error(`metrics: cannot listen on ${settings.metricsHost}:${settings.metricsPort}: ${errorMessage(err)}`);
      return undefined;
    });
    return this.server;
  }

  async close(): Promise<void> {
    this.observer.setOptions({});
    const server = await this.server;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
