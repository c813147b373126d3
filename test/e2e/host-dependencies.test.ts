import { expect } from 'chai';
import { copyFileSync, cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { startGateway, type GatewayProcess } from '../support/gateway-process';
import { http } from '../support/http';
import { ROOT } from '../packaging/support';

/** The version of `name` that Express Gateway itself loads (what package.json's overrides put beneath it). */
function hostsVersion(name: string): string {
  const host = dirname(require.resolve('express-gateway/package.json', { paths: [ROOT] }));
  const file = require.resolve(`${name}/package.json`, { paths: [host] });
  return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
}

/** The shipped system config, and a gateway config naming the host's own oauth2 policy (which renders with ejs). */
function configDirWithOauth2(): string {
  const dir = mkdtempSync(join(tmpdir(), 'contracts-host-deps-'));
  copyFileSync(join(ROOT, 'config', 'system.config.yml'), join(dir, 'system.config.yml'));
  cpSync(join(ROOT, 'config', 'models'), join(dir, 'models'), { recursive: true });
  writeFileSync(
    join(dir, 'gateway.config.yml'),
    ['http:', '  port: ${PORT:-8080}', '  hostname: ${HOST:-127.0.0.1}', 'policies:', '  - oauth2', ''].join('\n'),
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
    const [major, minor, patch] = hostsVersion('ejs').split('.').map(Number);
    expect(major).to.equal(3);
    expect(minor * 1000 + patch).to.be.at.least(1010);
  });

  it("ejs: the host's oauth2 login page (its own ejs views) still renders", async () => {
    const res = await http('GET', `${gw!.baseUrl}/login`);
    expect(res.status, res.text).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^text\/html/);
    expect(res.text).to.match(/<form[^>]+action="\/login"[^>]*method="post"/i);
    expect(gw!.output()).not.to.match(/DeprecationWarning|\n\s+at /);
  });
});
