import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Server as NetServer } from 'node:net';
import { finalHandler } from '../http/final-handler';
import type { Logger } from '../logger';
import type { HostConfig, PluginContext } from './plugin-context';
import type { HostGatewayConfig, HostPort, HostServer } from './port';
import { hookHostServers } from './servers';

/** Express Gateway 1.16's servers announce themselves on its event bus, one event per protocol. */
const SERVER_EVENTS = ['http-ready', 'https-ready'];

/**
 * The port of Express Gateway 1.16 (plugin/host/port.ts), from what it hands init() (lib/plugins.js). The host
 * hands a new context to each init() (the start and every reload), so init() makes one each time.
 */
export function expressGatewayPort(ctx: PluginContext): HostPort {
  const config = gatewayConfigOf(ctx);
  const { eventBus, logger } = ctx;
  return {
    ...config,
    logger,
    pluginSettings: ctx.settings,
    registerPolicy: (policy) => ctx.registerPolicy(policy),
    registerCondition: (condition) => ctx.registerCondition(condition),
    registerGatewayRoute: (declaration) => ctx.registerGatewayRoute(declaration),
    onServer(listener) {
      // No event bus: not a gateway process (a test's context), so no server will start.
      if (!eventBus) return;
      const onReady = ({ httpServer }: { httpServer?: Server }): void => {
        if (httpServer) listener(hostServer(httpServer, logger));
      };
      for (const event of SERVER_EVENTS) eventBus.on(event, onReady);
    },
    hookServers(observe, limits) {
      if (eventBus) hookHostServers(eventBus, observe, limits, logger);
    },
  };
}

/**
 * The gateway config part of the port, from the host's Config object and event bus. `loadConfig('gateway')` replaces
 * `config.gatewayConfig`; the 'hot-reload' event is what the host's own file watcher emits, and rebuilds the pipelines.
 */
export function gatewayConfigOf(host: HostConfig): HostGatewayConfig {
  const { config } = host;
  return {
    gatewayConfig: () => config.gatewayConfig,
    gatewayConfigPath: () => config.gatewayConfigPath,
    readGatewayConfig: () => config.loadConfig('gateway'),
    reloadGateway: () => {
      config.loadConfig('gateway');
      host.eventBus.emit('hot-reload', { type: 'gateway', config });
    },
  };
}

/** One of the host's servers as the port offers it; `log` gets what the host's app fails on. */
function hostServer(server: Server, log: Pick<Logger, 'warn'>): HostServer {
  return {
    front(step) {
      // The host's express app is the server's 'request' listener; it is called from here instead, with our final
      // handler: its own would answer failures with an HTML stack trace.
      const listeners = server.listeners('request') as Array<
        (req: IncomingMessage, res: ServerResponse, done: (err?: unknown) => void) => void
      >;
      server.removeAllListeners('request');
      server.on('request', (req: IncomingMessage, res: ServerResponse) => {
        if (step(req, res)) return;
        for (const l of listeners) l.call(server, req, res, finalHandler(req, res, log));
      });
    },
    onConnection(listener) {
      server.on('connection', listener);
    },
    // Only the listener: http.Server#close() would also end idle keep-alive connections at once, resetting a
    // request the client is sending on one at that moment.
    stopListening: () => NetServer.prototype.close.call(server),
    closeIdleConnections: () => server.closeIdleConnections(),
    closeAllConnections: () => server.closeAllConnections(),
  };
}
