import { expect } from 'chai';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, packTarball, run, startProcess, answers, type Started } from './support';
import { AMQP_URL, freePort, uniquePrefix } from '../support/env';
import { deleteBusTopology } from '../support/broker';
import { eventually } from '../support/gateway-process';
import { http, httpAs } from '../support/http';
import { TEST_JWT_SECRET } from '../support/tokens';
import { AmqpTransport } from '../../plugin/bus/amqp';
import { serve } from '../../sdk';

interface Stage {
  env: Record<string, string>;
  lines: string[];
}

/** A stage of the Dockerfile by name: its ENV (what the image is configured with) and its instructions. */
function dockerfileStage(name: string): Stage {
  const text = readFileSync(join(ROOT, 'Dockerfile'), 'utf8').replace(/\\\n\s*/g, ' ');
  const stages = text.split(/^FROM /m);
  const stage = stages.find((s) => new RegExp(`^\\S+ AS ${name}\\b`).test(s));
  if (!stage) throw new Error(`Dockerfile has no ${name} stage`);
  const lines = stage
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const env: Record<string, string> = {};
  for (const l of lines.filter((x) => x.startsWith('ENV '))) {
    for (const m of l.slice(4).matchAll(/([A-Z_]+)=(\S+)/g)) env[m[1]] = m[2];
  }
  return { env, lines };
}

/**
 * What the image runs, without a container engine: the Dockerfile's install script on the packed plugin, then its
 * start command with its environment (paths moved to a temp dir), then requests. The image itself is built and
 * run by scripts/ci/container-check.sh (.ci/run), with the same scripts.
 */
describe('sidecar image steps (scripts/container, as the Dockerfile uses them)', function () {
  this.timeout(300000);
  const stage = dockerfileStage('gateway');
  let tmp: string;
  let app: string;

  before(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'contracts-image-'));
    const tarball = await packTarball(tmp);
    app = join(tmp, 'app');
    const r = await run('sh', [
      join(ROOT, 'scripts', 'container', 'install.sh'),
      tarball,
      join(ROOT, 'package-lock.json'),
      app,
    ]);
    expect(r.code, r.output).to.equal(0);
  });

  after(() => rmSync(tmp, { recursive: true, force: true }));

  it('the Dockerfile installs and starts through these scripts: multi-stage, non-root, HEALTHCHECK on /health', () => {
    const install = dockerfileStage('install');
    expect(install.lines).to.include('COPY scripts/container/ /opt/contracts/');
    expect(install.lines).to.include('COPY package-lock.json /tmp/package-lock.json');
    expect(install.lines).to.include('RUN /opt/contracts/install.sh /tmp/plugin.tgz /tmp/package-lock.json /app');
    const { lines, env } = stage;
    // The runtime stage takes the installed /app and nothing else: no tarball, no install script, no npm step.
    expect(lines.filter((l) => l.startsWith('COPY '))).to.deep.equal(['COPY --from=install /app /app']);
    expect(lines.filter((l) => l.startsWith('RUN ')).join(' ')).not.to.match(/npm|tgz/);
    expect(lines).to.include('USER node');
    expect(lines).to.include('CMD ["/app/start.sh"]');
    expect(lines.some((l) => l.startsWith('HEALTHCHECK') && l.includes('/app/healthcheck.js'))).to.equal(true);
    expect(readFileSync(join(ROOT, 'scripts', 'container', 'healthcheck.js'), 'utf8')).to.include('/health');
    expect(env).to.include({
      APP_DIR: '/app',
      EG_CONFIG_DIR: '/var/lib/gateway',
      EG_CONFIG_SOURCE: '/etc/gateway',
      HOST: '0.0.0.0',
      PORT: '8080',
    });
  });

  it("the Dockerfile builds with the project's compiler and installs from the lockfile only", () => {
    const build = dockerfileStage('build').lines.join('\n');
    expect(build).to.include('npm run build');
    expect(build).to.match(/mkdir -p \/tmp\/pack\s+&&\s+npm pack --ignore-scripts --pack-destination \/tmp\/pack/);
    const text = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
    expect(text).not.to.match(/^[^#]*\bnpx\b/m);
    expect(text).not.to.match(/^[^#]*npm (install|i|update)\b/m);
    expect(readFileSync(join(ROOT, 'scripts', 'container', 'install.sh'), 'utf8')).not.to.match(
      /^[^#]*npm (install|i|update)\b/m,
    );
    const reference = dockerfileStage('reference-services').lines;
    expect(reference.filter((l) => l.startsWith('COPY ')).every((l) => l.startsWith('COPY --from='))).to.equal(true);
    expect(reference).to.include('USER node');
    expect(dockerfileStage('reference-install').lines).to.include(
      'RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund',
    );
  });

  it('installs the versions package-lock.json pins, production dependencies only, and leaves no tarball', () => {
    const repo = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')).packages;
    // node_modules/.package-lock.json is npm's record of what is actually in node_modules.
    const installed = JSON.parse(readFileSync(join(app, 'node_modules', '.package-lock.json'), 'utf8')).packages;
    expect(installed['node_modules/express-gateway-plugin-contracts']).to.be.an('object');
    // Optional entries (the reference services' databases, and what only they or the tests need: devOptional) are
    // not the gateway's.
    for (const [path, entry] of Object.entries<{
      version: string;
      integrity?: string;
      dev?: boolean;
      optional?: boolean;
      devOptional?: boolean;
      link?: boolean;
    }>(repo)) {
      // The repository's workspaces (sdk/) and their links are not installed packages.
      if (!path.startsWith('node_modules/') || entry.link || entry.optional || entry.devOptional) continue;
      if (entry.dev) expect(installed, path).not.to.have.property(path);
      else
        expect({ path, version: installed[path]?.version, integrity: installed[path]?.integrity }).to.deep.equal({
          path,
          version: entry.version,
          integrity: entry.integrity,
        });
    }
    expect(installed).not.to.have.property('node_modules/mocha');
    expect(installed).not.to.have.property('node_modules/typescript');
    expect(installed).not.to.have.property('node_modules/@electric-sql/pglite');
    expect(installed).not.to.have.property('node_modules/pg');
    expect(readdirSync(app).filter((f) => f.endsWith('.tgz'))).to.deep.equal([]);
  });

  it("refuses a lockfile that is not the plugin's", () => {
    const { gatewayLockfile } = require(join(ROOT, 'scripts', 'container', 'lockfile.js')) as {
      gatewayLockfile: (lock: unknown, tarball: Buffer) => unknown;
    };
    expect(() =>
      gatewayLockfile({ lockfileVersion: 3, packages: { '': { name: 'another-app' } } }, Buffer.from('')),
    ).to.throw(/not express-gateway-plugin-contracts's/);
    expect(() => gatewayLockfile({ lockfileVersion: 1, dependencies: {} }, Buffer.from(''))).to.throw(
      /lockfileVersion 2 or 3/,
    );
  });

  it("leaves the repository's linked folders (file: dev helpers) out of the gateway's lockfile", () => {
    const { gatewayLockfile } = require(join(ROOT, 'scripts', 'container', 'lockfile.js')) as {
      gatewayLockfile: (lock: unknown, tarball: Buffer) => { packages: Record<string, unknown> };
    };
    const repo = {
      lockfileVersion: 3,
      packages: {
        '': { name: 'express-gateway-plugin-contracts', version: '1.0.0', dependencies: { yaml: '^2' } },
        'node_modules/yaml': { version: '2.9.1', integrity: 'sha512-x' },
        'node_modules/helper': { resolved: 'test/helper', link: true },
        'test/helper': { name: 'helper', dev: true },
      },
    };
    const lock = gatewayLockfile(repo, Buffer.from('tarball'));
    expect(Object.keys(lock.packages)).to.include('node_modules/yaml').and.not.include('node_modules/helper');
  });

  describe('the start command', () => {
    let gw: Started | undefined;
    let prefix: string;
    let port: number;
    let state: string;
    let mounted: string;
    const handWritten = `# mounted read-only by the operator
http:
  port: \${PORT:-8080}
  hostname: \${HOST:-127.0.0.1}
apiEndpoints:
  ping:
    paths: ['/ping']
serviceEndpoints: {}
policies:
  - terminate
pipelines:
  ping:
    apiEndpoints: [ping]
    policies:
      - terminate:
          - action: { statusCode: 200, message: pong }
`;

    before(async () => {
      port = await freePort();
      prefix = uniquePrefix('image');
      state = join(tmp, 'var-lib-gateway');
      mounted = join(tmp, 'etc-gateway');
      mkdirSync(mounted);
      writeFileSync(join(mounted, 'gateway.config.yml'), handWritten);
      chmodSync(join(mounted, 'gateway.config.yml'), 0o444);
      // The image's environment, with its paths moved into the temp dir and the test's broker, port and secret.
      const env = {
        ...stage.env,
        APP_DIR: app,
        EG_CONFIG_DIR: state,
        EG_CONFIG_SOURCE: mounted,
        PORT: String(port),
        BUS_URL: AMQP_URL,
        BUS_PREFIX: prefix,
        JWT_SECRET: TEST_JWT_SECRET,
        LOG_LEVEL: 'warn',
      };
      gw = await startProcess(join(app, 'start.sh'), [], { cwd: tmp, env }, () =>
        answers(`http://127.0.0.1:${port}/health`),
      );
    });

    after(async () => {
      await gw?.stop();
      await deleteBusTopology(AMQP_URL, prefix);
    });

    it('passes the HEALTHCHECK command', async () => {
      await eventually(async () => {
        const r = await run(process.execPath, [join(app, 'healthcheck.js')], {
          env: { PORT: String(port) },
          timeoutMs: 10000,
        });
        expect(r.code, r.output).to.equal(0);
      }, 15000);
      const health = await http('GET', `http://127.0.0.1:${port}/health`);
      expect(health.status).to.equal(200);
    });

    it('serves the mounted hand-written pipeline and discovered contracts from the writable copy, leaving the mount alone', async () => {
      const ping = await fetch(`http://127.0.0.1:${port}/ping`);
      expect(ping.status).to.equal(200);
      expect(await ping.text()).to.equal('pong');

      const transport = new AmqpTransport(AMQP_URL, { prefix });
      await transport.start();
      const running = await serve({
        transport,
        service: 'gadget-service',
        operations: [
          {
            contract: {
              messageType: 'ListGadgetsQuery',
              inputSchema: { type: 'object' },
              outputSchema: { type: 'object' },
              requiredPermissions: ['gadgets:read'],
            },
            handle: async () => ({ items: [{ id: 'g1' }] }),
          },
        ],
      });
      try {
        await eventually(async () => {
          const r = await httpAs(['gadgets:read'])('GET', `http://127.0.0.1:${port}/api/gadgets`);
          expect(r.status, r.text).to.equal(200);
          expect(r.body).to.deep.equal({ items: [{ id: 'g1' }] });
        }, 15000);
      } finally {
        await running.stop();
        await transport.close();
      }
      const written = readFileSync(join(state, 'gateway.config.yml'), 'utf8');
      expect(written).to.include('ping:').and.to.include('contracts-');
      expect(readFileSync(join(mounted, 'gateway.config.yml'), 'utf8')).to.equal(handWritten);
    });

    it('stops on SIGTERM with exit status 0', async () => {
      const code = await gw!.stop();
      gw = undefined;
      expect(code).to.equal(0);
    });
  });

  it('the start command stops on a mounted file the host cannot parse, with one line and exit 78', async () => {
    const mounted = join(tmp, 'etc-gateway-malformed');
    mkdirSync(mounted);
    writeFileSync(join(mounted, 'gateway.config.yml'), 'http:\n  port: 8080\npipelines: [unclosed, s3cret-value\n');
    const env = {
      ...stage.env,
      APP_DIR: app,
      EG_CONFIG_DIR: join(tmp, 'var-lib-malformed'),
      EG_CONFIG_SOURCE: mounted,
      LOG_LEVEL: 'warn',
    };
    const r = await run(join(app, 'start.sh'), [], { cwd: tmp, env, timeoutMs: 30000 });
    expect(r.code, r.output).to.equal(78);
    expect(r.output.trim().split('\n')).to.have.length(1);
    expect(r.output)
      .to.match(/gateway\.config\.yml is not valid YAML at line \d+, column \d+: /)
      .and.not.include('s3cret-value');
  });
});
