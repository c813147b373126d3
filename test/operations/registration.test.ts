import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import express from 'express';
import plugin = require('../../plugin/manifest');
import { currentRuntime, obtainRuntime } from '../../plugin/runtime';
import { resolveSettings } from '../../plugin/settings';
import { mountOperationsRoutes } from '../../plugin/operations/register';
import type { Logger } from '../../plugin/logger';

const RUNTIME_KEY = Symbol.for('express-gateway-plugin-contracts.runtime');
const quiet: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

function routeCount(app: express.Express): number {
  return ((app as unknown as { _router: { stack: unknown[] } })._router?.stack ?? []).length;
}

/** A PluginContext as the host builds it, recording what init() registers (no config file, no event bus). */
function fakeContext(gatewayRoutes: Array<(app: express.Express) => void>) {
  return {
    settings: {},
    logger: quiet,
    config: { loadConfig: () => undefined },
    eventBus: undefined as never,
    registerPolicy: () => undefined,
    registerCondition: () => undefined,
    registerGatewayRoute: (route: (app: express.Express) => void) => void gatewayRoutes.push(route),
  };
}

describe('registration of the operations routes', () => {
  it('mounts once per express app, however often the host replays the registration', () => {
    const app = express();
    mountOperationsRoutes(app);
    const once = routeCount(app);
    expect(once).to.be.greaterThan(0);
    mountOperationsRoutes(app);
    expect(routeCount(app)).to.equal(once);
  });

  describe('through the plugin\'s init()', () => {
    let server: Server | undefined;
    let created = false;
    before(function () {
      if (currentRuntime()) this.skip(); // another suite's runtime is live; this one needs its own
      created = true;
      obtainRuntime(resolveSettings({ busUrl: 'embedded', writeConfig: false }, {}), quiet);
    });
    after(async () => {
      await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
      if (created) {
        await currentRuntime()?.close();
        delete (globalThis as Record<symbol, unknown>)[RUNTIME_KEY];
      }
    });

    it('registers the gateway routes on the first init() only; the handlers read the settings per request', async () => {
      const registered: Array<(app: express.Express) => void> = [];
      plugin.init(fakeContext(registered) as never);
      plugin.init(fakeContext(registered) as never); // a config reload
      plugin.init(fakeContext(registered) as never);
      expect(registered).to.have.length(1);

      const app = express();
      registered[0]!(app);
      server = createServer(app);
      await new Promise<void>((r) => server!.listen(0, '127.0.0.1', () => r()));
      const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
      const health = await fetch(`${base}/health`);
      expect(health.status).to.equal(200);
      expect(await health.json()).to.deep.include({ status: 'ok', bus: { kind: 'inprocess', state: 'up' } });
      expect((await fetch(`${base}/debug/contracts`)).status).to.equal(404);
      (currentRuntime()!.settings as { debugEndpoints: boolean }).debugEndpoints = true;
      const debug = await fetch(`${base}/debug/contracts`);
      expect(debug.status).to.equal(200);
      expect(await debug.json()).to.have.keys('now', 'bus', 'entries', 'instances', 'conflicts', 'openapi');
    });
  });
});
