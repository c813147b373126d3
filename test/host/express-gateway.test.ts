import { expect } from 'chai';
import { EventEmitter } from 'node:events';
import { Agent, createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expressGatewayPort, gatewayConfigOf } from '../../plugin/host/express-gateway';
import type { PluginContext } from '../../plugin/host/plugin-context';
import type { HostServer } from '../../plugin/host/port';
import { http } from '../support/http';
import { quiet } from '../support/runtime';

/**
 * The adapter against a host object shaped as Express Gateway 1.16 builds it (lib/plugins.js, lib/config, lib/eventBus),
 * recording what the port does to it. The real host runs in the e2e tests (test/e2e/graceful-stop.test.ts, the
 * reloads of test/e2e/discovery.test.ts and fail-closed.test.ts); here, what each call of the port comes to.
 */
function fakeHost(opts: { eventBus?: boolean } = {}) {
  const calls: unknown[][] = [];
  const config = {
    gatewayConfigPath: '/etc/eg/gateway.config.yml',
    gatewayConfig: { pipelines: { first: {} } } as unknown,
    loadConfig(type: 'gateway') {
      calls.push(['loadConfig', type]);
      config.gatewayConfig = { pipelines: { reloaded: {} } };
    },
  };
  const bus = new EventEmitter();
  bus.on('hot-reload', (payload) => calls.push(['hot-reload', payload]));
  const ctx = {
    config,
    eventBus: opts.eventBus === false ? undefined : bus,
    settings: { busUrl: 'embedded' },
    logger: quiet,
    registerPolicy: (policy: unknown) => calls.push(['registerPolicy', policy]),
    registerCondition: (condition: unknown) => calls.push(['registerCondition', condition]),
    registerGatewayRoute: (route: unknown) => calls.push(['registerGatewayRoute', route]),
  } as unknown as PluginContext;
  return { ctx, config, bus, calls };
}

describe('the Express Gateway adapter (plugin/host/express-gateway.ts)', () => {
  describe('the gateway config', () => {
    it("reads the config the host holds now, so a reload's replacement is seen", () => {
      const { ctx, config } = fakeHost();
      const port = gatewayConfigOf(ctx);
      expect(port.gatewayConfigPath()).to.equal('/etc/eg/gateway.config.yml');
      expect(port.gatewayConfig()).to.deep.equal({ pipelines: { first: {} } });
      config.gatewayConfig = { pipelines: { edited: {} } };
      expect(port.gatewayConfig()).to.deep.equal({ pipelines: { edited: {} } });
    });

    it('readGatewayConfig has the host read the file and rebuilds nothing (init() builds next)', () => {
      const { ctx, calls } = fakeHost();
      const port = gatewayConfigOf(ctx);
      port.readGatewayConfig();
      expect(calls).to.deep.equal([['loadConfig', 'gateway']]);
      expect(port.gatewayConfig()).to.deep.equal({ pipelines: { reloaded: {} } });
    });

    it("reloadGateway has the host read the file, then emits the host's hot-reload with its Config", () => {
      const { ctx, config, calls } = fakeHost();
      gatewayConfigOf(ctx).reloadGateway();
      expect(calls).to.deep.equal([
        ['loadConfig', 'gateway'],
        ['hot-reload', { type: 'gateway', config }],
      ]);
      expect((calls[1][1] as { config: unknown }).config).to.equal(config);
    });
  });

  describe('the rest of init()', () => {
    it("passes registrations and the plugin's settings and logger on as the host gave them", () => {
      const { ctx, calls } = fakeHost();
      const port = expressGatewayPort(ctx);
      const policy = { name: 'p' };
      const condition = { name: 'c' };
      const route = (): void => undefined;
      port.registerPolicy(policy);
      port.registerCondition(condition);
      port.registerGatewayRoute(route);
      expect(calls).to.deep.equal([
        ['registerPolicy', policy],
        ['registerCondition', condition],
        ['registerGatewayRoute', route],
      ]);
      expect(port.pluginSettings).to.equal(ctx.settings);
      expect(port.logger).to.equal(quiet);
    });

    it('without an event bus (no gateway process) reports no server and hooks none', () => {
      const { ctx } = fakeHost({ eventBus: false });
      const port = expressGatewayPort(ctx);
      const seen: HostServer[] = [];
      port.onServer((s) => seen.push(s));
      port.hookServers(() => undefined, { headersTimeoutMs: 1000, requestReceiveTimeoutMs: 1000 });
      expect(seen).to.deep.equal([]);
    });
  });

  describe("the host's servers", () => {
    let server: Server;
    let base: string;
    /** What the host's express app got: the request's URL, and whether it was handed a final handler. */
    let appCalls: Array<{ url?: string; done: string }>;

    beforeEach(async () => {
      appCalls = [];
      // The host's express app, as the server's 'request' listener: it fails on /fail through its `done`.
      const app = (req: IncomingMessage, res: ServerResponse, done?: (err?: unknown) => void): void => {
        appCalls.push({ url: req.url, done: typeof done });
        if (req.url === '/fail' && done) return done(new Error('at /srv/app/secret.js:1'));
        res.end('from the app');
      };
      server = createServer(app);
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    afterEach(async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    });

    function announced(): HostServer[] {
      const { ctx, bus } = fakeHost();
      const seen: HostServer[] = [];
      expressGatewayPort(ctx).onServer((s) => seen.push(s));
      bus.emit('http-ready', { httpServer: server });
      bus.emit('https-ready', { httpServer: server });
      bus.emit('http-ready', {});
      return seen;
    }

    it("reports each server of 'http-ready' and 'https-ready', and nothing for an event without one", () => {
      expect(announced()).to.have.length(2);
    });

    it("fronts the host's app: a request the front answers never reaches it; the rest do, with a final handler", async () => {
      const [host] = announced();
      const fronted: string[] = [];
      host.front((req, res) => {
        fronted.push(req.url ?? '');
        if (req.url !== '/answered') return false;
        res.statusCode = 503;
        res.end('from the front');
        return true;
      });
      const answered = await http('GET', `${base}/answered`);
      expect([answered.status, answered.text]).to.deep.equal([503, 'from the front']);
      const passed = await http('GET', `${base}/passed`);
      expect([passed.status, passed.text]).to.deep.equal([200, 'from the app']);
      expect(fronted).to.deep.equal(['/answered', '/passed']);
      expect(appCalls).to.deep.equal([{ url: '/passed', done: 'function' }]);
    });

    it("answers what the host's app fails on with the error body: no stack trace, no path", async () => {
      announced()[0].front(() => false);
      const failed = await http('GET', `${base}/fail`);
      expect(failed.status).to.equal(500);
      expect(failed.body.code).to.equal('INTERNAL_ERROR');
      expect(failed.text).to.not.match(/secret\.js|\/srv\/|at /);
      expect(failed.headers.get('x-correlation-id')).to.be.a('string');
    });

    it('sees connections, and after stopListening refuses new ones while an open one is still served', async () => {
      const [host] = announced();
      let connections = 0;
      host.onConnection(() => {
        connections += 1;
      });
      host.front(() => false);
      // One kept-alive connection: the second request goes on the first one's.
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      const get = (path: string) =>
        new Promise<number | string>((resolve) => {
          request(`${base}${path}`, { agent }, (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          })
            .on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'))
            .end();
        });
      try {
        expect(await get('/one')).to.equal(200);
        host.stopListening();
        expect(server.listening).to.equal(false);
        expect(await get('/two')).to.equal(200);
        expect(connections).to.equal(1);
        host.closeAllConnections();
        expect(await get('/three')).to.equal('ECONNREFUSED');
      } finally {
        agent.destroy();
      }
    });
  });
});
