import type { Server } from 'node:http';
import type { Logger } from '../logger';

/** The host's Config object and the hot-reload of its event bus (the adapter makes the config writer's port of them). */
export interface HostConfig {
  /** `gatewayConfig`: the gateway config as the host loaded it (the OpenAPI document reads its hand-written routes). */
  config: { gatewayConfigPath?: string; gatewayConfig?: unknown; loadConfig(type: 'gateway'): void };
  eventBus: { emit(event: 'hot-reload', ctx: { type: 'gateway'; config: unknown }): void };
}

/** What the host's event bus (express-gateway lib/eventBus) offers for its servers; only what is used. */
interface HostEventBus {
  on(event: string, listener: (payload: { httpServer?: Server }) => void): unknown;
}

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
