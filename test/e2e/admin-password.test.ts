import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually, startGateway, type GatewayProcess } from '../support/gateway-process';
import { http } from '../support/http';

const EMAIL = 'admin@example.com';
const CHOSEN = 'change-me-please';

/**
 * The quick start, then the walk-through (docs/walk-through.md), on one data directory: the generated password
 * logs in; a later ADMIN_PASSWORD is reported as not applied, in one line that names the way to apply it; that way
 * applies it.
 */
describe('npm start: ADMIN_PASSWORD for an administrator that already exists', function () {
  this.timeout(120_000);
  let configDir: string;
  let gw: GatewayProcess | undefined;

  before(() => {
    configDir = mkdtempSync(join(tmpdir(), 'contracts-admin-'));
  });
  afterEach(async () => {
    await gw?.stop();
    gw = undefined;
  });
  after(() => rmSync(configDir, { recursive: true, force: true }));

  const start = (env: Record<string, string | undefined>) =>
    startGateway({ BUS_URL: 'embedded', ADMIN_EMAIL: undefined, ADMIN_PASSWORD: undefined, ...env }, { configDir });
  // Under load the reference routes may come after "gateway ready" (404/503 until then): those are retried.
  const login = (password: string) =>
    eventually(
      async () => {
        const res = await http('POST', `${gw!.baseUrl}/api/login`, { body: { email: EMAIL, password } });
        expect(res.status, res.text).to.not.be.oneOf([404, 503]);
        return res;
      },
      15_000,
      200,
    );
  const notApplied = (out: string) => out.split('\n').filter((l) => l.includes('ADMIN_PASSWORD is not applied'));
  let generated: string;

  it('quick start: the generated password in .gateway/data/admin-password logs in (the walk-through reads it)', async () => {
    gw = await start({});
    generated = readFileSync(join(configDir, 'data', 'admin-password'), 'utf8').trim();
    expect((await login(generated)).status).to.equal(200);
  });

  it('then ADMIN_PASSWORD=… npm start: one line says it is not applied and how to apply it', async () => {
    gw = await start({ ADMIN_PASSWORD: CHOSEN });
    const lines = notApplied(gw.output());
    expect(lines, gw.output()).to.have.length(1);
    expect(lines[0]).to.include(EMAIL).and.include('ADMIN_PASSWORD_RESET=true').and.not.include(CHOSEN);
    expect((await login(CHOSEN)).status).to.equal(401);
    expect((await login(generated)).status).to.equal(200);
  });

  it('ADMIN_PASSWORD_RESET=true sets it and revokes the old refresh tokens; the same password later says nothing', async () => {
    gw = await start({});
    const before = await login(generated);
    await gw.stop();
    gw = await start({ ADMIN_PASSWORD: CHOSEN, ADMIN_PASSWORD_RESET: 'true' });
    expect(gw.output()).to.include(`administrator ${EMAIL}: password set from ADMIN_PASSWORD`).and.not.include(CHOSEN);
    expect((await login(CHOSEN)).status).to.equal(200);
    expect((await login(generated)).status).to.equal(401);
    const refresh = await http('POST', `${gw.baseUrl}/api/refresh-token`, {
      body: { refreshToken: before.body.refreshToken },
    });
    expect(refresh.status, refresh.text).to.equal(401);
    await gw.stop();
    gw = await start({ ADMIN_PASSWORD: CHOSEN });
    expect(notApplied(gw.output()), gw.output()).to.deep.equal([]);
    expect((await login(CHOSEN)).status).to.equal(200);
  });

  it('a misspelt ADMIN_PASSWORD_RESET stops the start with one line', async () => {
    const err = await start({ ADMIN_PASSWORD: CHOSEN, ADMIN_PASSWORD_RESET: 'yes' }).then(
      (started) => {
        gw = started;
        return new Error('the gateway started');
      },
      (e: Error) => e,
    );
    expect(err.message).to.match(
      /^gateway exited with 1:\n\[contracts\] start failed: ADMIN_PASSWORD_RESET must be true or false\n?$/,
    );
  });
});
