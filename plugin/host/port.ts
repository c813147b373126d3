import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Express } from 'express';
import type { Logger } from '../logger';
import type { ObserveRequest, ServerLimits } from './servers';

/**
 * The host's gateway config, as the core uses it: the config writer writes the file and has the host read it, the
 * OpenAPI document and the exclusion check read its hand-written pipelines.
 */
export interface HostGatewayConfig {
  /** gateway.config.yml as the host last loaded it; read on each call, since a reload replaces it. */
  gatewayConfig(): unknown;
  /** The file the host reads gateway.config.yml from; undefined when it has none. */
  gatewayConfigPath(): string | undefined;
  /** The host reads the file again now, without rebuilding anything: inside init(), whose pipelines it builds next. */
  readGatewayConfig(): void;
  /**
   * The host reads the file again and rebuilds its pipelines (its hot reload, which re-runs init()), now rather than
   * when its file watcher notices (about 2 s later, and never with EG_DISABLE_CONFIG_WATCH).
   */
  reloadGateway(): void;
}

/** One HTTP(S) server the host serves on, as the graceful stop drains it. */
export interface HostServer {
  /**
   * `step` sees every request before the host's app does (one per server). It returns true when it answered the
   * request itself; otherwise the host's app gets it, with the plugin's final handler for what the app fails on.
   */
  front(step: (req: IncomingMessage, res: ServerResponse) => boolean): void;
  /** Called with every connection the server accepts from now on. */
  onConnection(listener: (socket: Socket) => void): void;
  /** Closes the listening socket only: open connections stay, and their requests still reach `front`. */
  stopListening(): void;
  /** Ends the connections that carry no request now. */
  closeIdleConnections(): void;
  /** Ends every connection left. */
  closeAllConnections(): void;
}

/**
 * What the plugin asks of its host, and all it knows of it: init() wraps what the host hands it in one
 * (plugin/host/express-gateway.ts, the adapter for Express Gateway 1.16) and passes it on. Nothing outside
 * plugin/host/ reaches the host's config object, its reload, its event bus or its servers any other way.
 */
export interface HostPort extends HostGatewayConfig {
  /** The host's logger. */
  readonly logger: Logger;
  /** The plugin's settings as the host's system.config.yml gives them. */
  readonly pluginSettings: Record<string, unknown>;
  /** Registers a policy under its `name` (the host builds its steps from it on every (re)load). */
  registerPolicy(policy: unknown): void;
  /** Registers a condition under its `name`. */
  registerCondition(condition: unknown): void;
  /** Called with the gateway's express app before the pipelines are mounted, and again on every reload. */
  registerGatewayRoute(declaration: (app: Express) => void): void;
  /** Called with every HTTP(S) server the host starts from now on (none outside a gateway process: tests). */
  onServer(listener: (server: HostServer) => void): void;
  /**
   * Every server the host starts from now on: `observe` sees every request first, requests Node's parser refuses or
   * that arrive too slowly get the error body, and the server gets `limits` (plugin/host/servers.ts).
   */
  hookServers(observe: ObserveRequest, limits: ServerLimits): void;
}
