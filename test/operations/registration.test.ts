import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import express from 'express';
import plugin = require('../../plugin/manifest');
import { currentRuntime, type Runtime } from '../../plugin/runtime';
import { operationsRoutes } from '../../plugin/operations/register';
import { quiet, testRuntime } from '../support/runtime';

function routeCount(app: express.Express): number {
  return ((app as unknown as { _router: { stack: unknown[] } })._router?.stack ?? []).length;
}

/** A PluginContext as the host builds it, recording what init() registers (no config file, no event bus). */
function fakeContext(gatewayRoutes: Array<(app: express.Express) => void>, policies: Array<{ name: string }> = []) {
  return {
    settings: { busUrl: 'embedded', writeConfig: false },
    logger: quiet,
    config: { loadConfig: () => undefined },
    eventBus: undefined as never,
    registerPolicy: (policy: { name: string }) => void policies.push(policy),
    registerCondition: () => undefined,
    registerGatewayRoute: (route: (app: express.Express) => void) => void gatewayRoutes.push(route),
  };
}

describe('registration of the operations routes', () => {
  it('mounts once per express app, however often the host replays the registration', async () => {
    const runtime = testRuntime();
    try {
      const mount = operationsRoutes(runtime);
      const app = express();
      mount(app);
      const once = routeCount(app);
      expect(once).to.be.greaterThan(0);
      mount(app);
      expect(routeCount(app)).to.equal(once);
    } finally {
      await runtime.close();
    }
  });

  describe("through the plugin's init()", () => {
    let server: Server | undefined;
    let runtime: Runtime | undefined;
    after(async () => {
      await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
      // The process's runtime stays in its holder (as in a gateway process) but stops its bus and timers.
      await runtime?.close();
    });

    it("makes the process's runtime on the first init() and reuses it on a reload, registering the gateway routes once", async () => {
      // No other suite makes the process's runtime: tests build their own (testRuntime).
      expect(currentRuntime()).to.equal(undefined);
      const registered: Array<(app: express.Express) => void> = [];
      const policies: Array<{ name: string }> = [];
      plugin.init(fakeContext(registered, policies) as never);
      runtime = currentRuntime();
      expect(runtime).to.not.equal(undefined);
      plugin.init(fakeContext(registered) as never); // a config reload
      plugin.init(fakeContext(registered) as never);
      expect(currentRuntime()).to.equal(runtime);
      expect(registered).to.have.length(1);
      expect(policies.map((p) => p.name)).to.deep.equal(plugin.policies);
      await runtime!.start();

      const app = express();
      registered[0]!(app);
      server = createServer(app);
      await new Promise<void>((r) => server!.listen(0, '127.0.0.1', () => r()));
      const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
      const health = await fetch(`${base}/health`);
      expect(health.status).to.equal(200);
      expect(await health.json()).to.deep.include({ status: 'ok', bus: { kind: 'inprocess', state: 'up' } });
      // The handlers read the settings per request.
      expect((await fetch(`${base}/debug/contracts`)).status).to.equal(404);
      (runtime!.settings as { debugEndpoints: boolean }).debugEndpoints = true;
      const debug = await fetch(`${base}/debug/contracts`);
      expect(debug.status).to.equal(200);
      expect(await debug.json()).to.have.keys('now', 'bus', 'entries', 'instances', 'conflicts', 'openapi');
    });
  });
});
