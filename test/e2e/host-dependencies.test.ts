import { expect } from 'chai';
import { copyFileSync, cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { startGateway, type GatewayProcess } from '../support/gateway-process';
import { http } from '../support/http';
import { ROOT } from '../packaging/support';

/**
 * The version of the last of `chain` as Express Gateway loads it (what package.json's overrides put beneath it):
 * `hostsVersion('ejs')` is the host's own ejs, `hostsVersion('uuid62', 'base-x')` the base-x its uuid62 loads.
 */
function hostsVersion(...chain: string[]): string {
  let dir = dirname(require.resolve('express-gateway/package.json', { paths: [ROOT] }));
  for (const name of chain) dir = dirname(require.resolve(`${name}/package.json`, { paths: [dir] }));
  return (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string }).version;
}

/** Whether `version` (x.y.z) is `minimum` or newer within the same major version. */
function atLeast(version: string, minimum: string): boolean {
  const [a, b] = [version, minimum].map((v) => v.split('.').map(Number));
  return a[0] === b[0] && (a[1] > b[1] || (a[1] === b[1] && a[2] >= b[2]));
}

/**
 * The shipped system config, and a gateway config naming the host's own oauth2 policy (which renders with ejs) and
 * two hand-written pipelines: the host names each request it runs through a pipeline with uuid62 (base-x's
 * encode), and the first answers with that name; the second runs the host's rate-limit policy (rate-limit-redis,
 * which loads redis, counting in the host's own db client).
 */
function configDirWithOauth2(): string {
  const dir = mkdtempSync(join(tmpdir(), 'contracts-host-deps-'));
  copyFileSync(join(ROOT, 'config', 'system.config.yml'), join(dir, 'system.config.yml'));
  cpSync(join(ROOT, 'config', 'models'), join(dir, 'models'), { recursive: true });
  writeFileSync(
    join(dir, 'gateway.config.yml'),
    [
      'http:',
      '  port: ${PORT:-8080}',
      '  hostname: ${HOST:-127.0.0.1}',
      'apiEndpoints:',
      '  request-name:',
      '    paths: /request-name',
      '  limited:',
      '    paths: /limited',
      'policies:',
      '  - oauth2',
      '  - expression',
      '  - terminate',
      '  - rate-limit',
      'pipelines:',
      '  request-name:',
      '    apiEndpoints: [request-name]',
      '    policies:',
      '      - expression:',
      '          - action: { jscode: "res.set(\'X-Request-Name\', requestID)" }',
      '      - terminate:',
      '          - action: { statusCode: 200, message: named }',
      '  limited:',
      '    apiEndpoints: [limited]',
      '    policies:',
      '      - rate-limit:',
      '          - action: { max: 2, windowMs: 60000 }',
      '      - terminate:',
      '          - action: { statusCode: 200, message: counted }',
      '',
    ].join('\n'),
  );
  return dir;
}

describe("the host's dependencies that package.json's overrides lift, in the real Express Gateway", function () {
  this.timeout(90000);
  let configDir: string;
  let gw: GatewayProcess | undefined;

  before(async () => {
    configDir = configDirWithOauth2();
    gw = await startGateway(
      { BUS_URL: 'embedded', START_REFERENCE_SERVICES: 'false' },
      { configDir, readyTimeoutMs: 50000 },
    );
  });

  after(async () => {
    await gw?.stop();
    rmSync(configDir, { recursive: true, force: true });
  });

  it('ejs: the host loads 3.1.10 or newer, not the 2.x of its own package.json', () => {
    const version = hostsVersion('ejs');
    expect(atLeast(version, '3.1.10'), version).to.equal(true);
  });

  it("ejs: the host's oauth2 login page (its own ejs views) still renders", async () => {
    const res = await http('GET', `${gw!.baseUrl}/login`);
    expect(res.status, res.text).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^text\/html/);
    expect(res.text).to.match(/<form[^>]+action="\/login"[^>]*method="post"/i);
    expect(gw!.output()).not.to.match(/DeprecationWarning|\n\s+at /);
  });

  it("base-x: the host's uuid62 loads 3.0.11 or newer, not the 3.0.5 it pins", () => {
    const version = hostsVersion('uuid62', 'base-x');
    expect(atLeast(version, '3.0.11'), version).to.equal(true);
  });

  it('base-x: the host still names each request it runs through a pipeline, 22 base-62 characters', async () => {
    const names = new Set<string>();
    for (let i = 0; i < 3; i++) {
      const res = await http('GET', `${gw!.baseUrl}/request-name`);
      expect(res.status, res.text).to.equal(200);
      const name = res.headers.get('x-request-name') ?? '';
      expect(name).to.match(/^[0-9A-Za-z]{22}$/);
      names.add(name);
    }
    expect(names.size).to.equal(3);
    expect(gw!.output()).not.to.match(/DeprecationWarning|\n\s+at /);
  });

  it('redis: rate-limit-redis loads 3.1.2 or newer, not the 2.8 it asks for', () => {
    const version = hostsVersion('rate-limit-redis', 'redis');
    expect(atLeast(version, '3.1.2'), version).to.equal(true);
  });

  it("redis: the host's rate-limit policy still counts: two requests pass, the third answers 429", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await http('GET', `${gw!.baseUrl}/limited`)).status);
    expect(statuses).to.deep.equal([200, 200, 429]);
    expect(gw!.output()).not.to.match(/DeprecationWarning|\n\s+at /);
  });
});
