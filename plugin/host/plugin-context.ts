import type { HostConfig } from '../config-writer/config-sync';
import type { Logger } from '../logger';
import type { HostEventBus } from '../shutdown/graceful-stop';

/** What the host hands init() (express-gateway lib/plugins.js PluginContext); only what we use. */
export interface PluginContext extends HostConfig {
  /** The host's Config; `gatewayConfig` is gateway.config.yml as the host loaded it for this (re)load. */
  config: HostConfig['config'] & { gatewayConfig?: unknown };
  settings: Record<string, unknown>;
  logger: Logger;
  registerPolicy(policy: unknown): void;
  registerCondition(condition: unknown): void;
  /** Called with the gateway's express app before the pipelines are mounted (and again on every reload). */
  registerGatewayRoute(declaration: (app: import('express').Express) => void): void;
  /** The host's event bus ('http-ready' / 'https-ready' carry { httpServer }). */
  eventBus: HostConfig['eventBus'] & HostEventBus;
}
