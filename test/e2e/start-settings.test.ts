import { expect } from 'chai';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startGateway, type GatewayProcess } from '../support/gateway-process';
import { http } from '../support/http';

const ROOT = resolve(__dirname, '..', '..', '..');

/** A config directory made from config/, with `extra` added to the plugins.contracts block of system.config.yml. */
function configDirWith(extra: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'contracts-settings-'));
  cpSync(join(ROOT, 'config'), dir, { recursive: true });
  const file = join(dir, 'system.config.yml');
  const text = readFileSync(file, 'utf8');
  const anchor = '    package: ${CONTRACTS_PLUGIN_PACKAGE:-express-gateway-plugin-contracts}\n';
  expect(text).to.contain(anchor);
  writeFileSync(file, text.replace(anchor, anchor + extra));
  return dir;
}

describe('npm start reads the plugins.contracts block of system.config.yml', function () {
  this.timeout(60_000);
  let gw: GatewayProcess | undefined;
  let dir: string | undefined;

  afterEach(async () => {
    await gw?.stop();
    gw = undefined;
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("applies a setting given only in the YAML block (with the host's ${VAR} substitution)", async () => {
    dir = configDirWith('    maxJsonDepth: ${TEST_JSON_DEPTH:-64}\n');
    gw = await startGateway({ TEST_JSON_DEPTH: '3' }, { configDir: dir });
    const deep = await http('POST', `${gw.baseUrl}/api/login`, { body: { a: { b: { c: { d: 1 } } } } });
    expect(deep.status).to.equal(400);
    expect(deep.body).to.include({ code: 'VALIDATION_ERROR' });
    const shallow = await http('POST', `${gw.baseUrl}/api/login`, {
      body: { email: 'nobody@example.com', password: 'wrong-password' },
    });
    expect(shallow.status).to.equal(401);
  });

  it('stops the start with one line and exit 78 on a bad value in the block', async () => {
    dir = configDirWith('    maxJsonDepth: 0\n');
    const err = await startGateway({}, { configDir: dir }).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(err?.message)
      .to.match(/exited with 78/)
      .and.match(/invalid setting: .*maxJsonDepth/);
  });
});
