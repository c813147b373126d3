import { expect } from 'chai';
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { ROOT, answers, packTarball, run, startProcess, type Started } from './support';
import { AMQP_URL, freePort, uniquePrefix } from '../support/env';
import { deleteBusTopology } from '../support/broker';
import { httpAs } from '../support/http';
import { eventually } from '../support/gateway-process';
import { TEST_JWT_SECRET } from '../support/tokens';

/**
 * The operator's path, as docs/installing.md tells it: `eg gateway create` (the host's generator, non-interactive flags),
 * `npm install <packed tarball>`, `eg plugins configure contracts`, `npm start`. Needs the npm registry (or its cache).
 */
describe('install as a plugin (npm pack → eg gateway create → npm install → eg plugins configure → start)', function () {
  this.timeout(300000);
  let tmp: string;
  let tarball: string;
  let gwDir: string;
  const eg = () => join(gwDir, 'node_modules', '.bin', 'eg');

  before(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'contracts-install-'));
    tarball = await packTarball(tmp);
    const created = await run(
      join(ROOT, 'node_modules', '.bin', 'eg'),
      ['gateway', 'create', '-n', 'ops-gateway', '-d', 'ops-gateway', '-t', 'basic'],
      { cwd: tmp },
    );
    expect(created.code, created.output).to.equal(0);
    gwDir = join(tmp, 'ops-gateway');
    const installed = await run('npm', ['install', tarball], { cwd: gwDir });
    expect(installed.code, installed.output).to.equal(0);
    const configured = await run(eg(), ['plugins', 'configure', 'contracts'], { cwd: gwDir, timeoutMs: 60000 });
    expect(configured.code, configured.output).to.equal(0);
  });

  after(() => rmSync(tmp, { recursive: true, force: true }));

  it('packs only what a user needs: compiled dist/ with types, the default config, README and docs', async () => {
    const listed = await run('tar', ['-tzf', tarball]);
    const files = listed.output
      .trim()
      .split('\n')
      .map((f) => f.replace(/^package\//, ''));
    for (const needed of [
      'package.json',
      'README.md',
      'docs/operations.md',
      'docs/bus-protocol.md',
      'config/system.config.yml',
      'config/gateway.config.yml',
      'dist/plugin/manifest.js',
      'dist/plugin/manifest.d.ts',
      'dist/sdk/index.js',
      'dist/sdk/index.d.ts',
    ]) {
      expect(files, needed).to.include(needed);
    }
    for (const f of files) {
      expect(f, f).to.match(
        /^(package\.json|README\.md|docs\/[^/]+\.md|config\/.+|dist\/(plugin|policies|conditions|sdk)\/.+\.(js|d\.ts))$/,
      );
    }
  });

  it('ends in the plugins entry `eg plugins install` writes, with the policies the host needs', () => {
    const system = parse(readFileSync(join(gwDir, 'config', 'system.config.yml'), 'utf8'));
    expect(system.plugins).to.deep.equal({ contracts: { package: 'express-gateway-plugin-contracts' } });
    const pkg = JSON.parse(readFileSync(join(gwDir, 'package.json'), 'utf8'));
    expect(pkg.dependencies).to.have.property('express-gateway-plugin-contracts');
  });

  describe('the installed gateway', () => {
    let port: number;
    let prefix: string;
    const env = () => ({ BUS_URL: AMQP_URL, BUS_PREFIX: prefix, JWT_SECRET: TEST_JWT_SECRET, LOG_LEVEL: 'warn' });

    before(async () => {
      port = await freePort();
      const admin = await freePort();
      prefix = uniquePrefix('install');
      // What an operator edits in the generated gateway: its ports.
      const file = join(gwDir, 'config', 'gateway.config.yml');
      writeFileSync(
        file,
        readFileSync(file, 'utf8').replace('port: 8080', `port: ${port}`).replace('port: 9876', `port: ${admin}`),
      );
    });

    after(async () => {
      await deleteBusTopology(AMQP_URL, prefix);
    });

    it('starts as `npm start` does (node server.js), serves a contract announced by a service using the installed SDK, and stops on SIGTERM with 0', async () => {
      // `npm start` runs `node server.js` here; run directly, as under a supervisor, so SIGTERM reaches the gateway.
      const gw: Started = await startProcess(process.execPath, ['server.js'], { cwd: gwDir, env: env() }, () =>
        answers(`http://127.0.0.1:${port}/api/widgets/w1`),
      );
      // The SDK as a service written against the published package would load it.
      const sdk = require(join(gwDir, 'node_modules', 'express-gateway-plugin-contracts', 'dist', 'sdk'));
      const transport = sdk.createTransport({ url: AMQP_URL, prefix });
      try {
        await transport.start();
        const running = await sdk.serve({
          transport,
          service: 'widget-service',
          operations: [
            {
              contract: {
                messageType: 'GetWidgetQuery',
                inputSchema: { type: 'object', properties: { widgetId: { type: 'string' } }, required: ['widgetId'] },
                outputSchema: { type: 'object' },
                requiredPermissions: ['widgets:read'],
              },
              handle: async (input: { widgetId: string }) => ({ widgetId: input.widgetId, name: 'sprocket' }),
            },
          ],
        });
        const http = httpAs(['widgets:read']);
        await eventually(async () => {
          const r = await http('GET', `http://127.0.0.1:${port}/api/widgets/w1`);
          expect(r.status, r.text).to.equal(200);
          expect(r.body).to.deep.equal({ widgetId: 'w1', name: 'sprocket' });
        }, 15000);
        expect((await httpAs([])('GET', `http://127.0.0.1:${port}/api/widgets/w1`)).status).to.equal(403);
        await running.stop();
      } finally {
        await transport.close();
        const code = await gw.stop();
        expect(code, gw.output()).to.equal(0);
      }
    });

    it('an invalid setting stops the start with one line naming it and a non-zero exit', async () => {
      const file = join(gwDir, 'config', 'system.config.yml');
      const original = readFileSync(file, 'utf8');
      try {
        appendFileSync(file, '\n    busPrefx: oops\n');
        const unknown = await run(process.execPath, ['server.js'], { cwd: gwDir, env: env(), timeoutMs: 30000 });
        expect(unknown.code, unknown.output).to.not.equal(0);
        const lines = unknown.output.split('\n').filter((l) => l.includes('invalid setting'));
        expect(lines, unknown.output).to.have.length(1);
        expect(lines[0]).to.include('plugins.contracts.busPrefx');
      } finally {
        writeFileSync(file, original);
      }
      const badUrl = await run(process.execPath, ['server.js'], {
        cwd: gwDir,
        env: { ...env(), BUS_URL: 'amqp://' },
        timeoutMs: 30000,
      });
      expect(badUrl.code).to.not.equal(0);
      expect(badUrl.output.split('\n').filter((l) => l.includes('invalid setting'))).to.have.length(1);
      expect(badUrl.output).to.include('BUS_URL');
    });
  });
});
