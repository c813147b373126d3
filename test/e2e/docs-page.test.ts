import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import { startGateway, type GatewayProcess } from '../support/gateway-process';

const CHROMIUM = '/usr/bin/chromium';
const ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync',
];

/** Debian's chromium, installed when missing; the reason it is not there otherwise. */
function ensureChromium(): string | undefined {
  if (existsSync(CHROMIUM)) return undefined;
  try {
    execFileSync('apt-get', ['install', '-y', '-qq', 'chromium'], { stdio: 'ignore', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }, timeout: 240_000 });
  } catch (err) {
    return `apt-get install -y chromium failed (${err instanceof Error ? err.message.split('\n')[0] : String(err)})`;
  }
  return existsSync(CHROMIUM) ? undefined : `${CHROMIUM} is still missing after apt-get install`;
}

describe('the docs page in a browser', function () {
  this.timeout(60000);
  let gw: GatewayProcess | undefined;
  let context: BrowserContext | undefined;
  let profile: string | undefined;

  before(async function () {
    this.timeout(300_000);
    const missing = ensureChromium();
    if (missing) {
      console.log(`      skipped: Chromium is not available: ${missing}`);
      this.skip();
    }
    gw = await startGateway({ BUS_URL: 'embedded' });
    profile = mkdtempSync(join(tmpdir(), 'contracts-chromium-'));
    // The fresh profile is Chromium's --user-data-dir: playwright passes it itself and refuses it among the args.
    context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: ARGS });
  });
  after(async () => {
    await context?.close();
    await gw?.stop();
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  it('renders the users operations from /api-docs/openapi.json, loading nothing from outside the gateway', async () => {
    const base = gw!.baseUrl;
    const outside: string[] = [];
    // Offline by construction: anything not from the gateway is refused and remembered.
    await context!.route('**/*', (route) => {
      const url = route.request().url();
      if (url.startsWith(base) || url.startsWith('data:')) return route.continue();
      outside.push(url);
      return route.abort();
    });
    const page = await context!.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    const specLoaded = page.waitForResponse((r) => r.url() === `${base}/api-docs/openapi.json` && r.status() === 200);
    const response = await page.goto(`${base}/api-docs`);
    expect(response?.status()).to.equal(200);
    await specLoaded;
    await page.waitForSelector('.opblock', { timeout: 20000 });

    const rendered = await page.$$eval('.opblock', (blocks) =>
      blocks.map((b) => `${b.querySelector('.opblock-summary-method')?.textContent?.trim()} ${b.querySelector('.opblock-summary-path')?.getAttribute('data-path') ?? b.querySelector('.opblock-summary-path')?.textContent?.trim()}`),
    );
    for (const op of ['POST /api/users', 'GET /api/users', 'GET /api/users/{userId}', 'PUT /api/users/{userId}', 'DELETE /api/users/{userId}']) {
      expect(rendered, `${op} is on the page`).to.include(op);
    }
    const tags = await page.$$eval('.opblock-tag', (els) => els.map((e) => e.getAttribute('data-tag')));
    expect(tags).to.include('users-service');
    expect(await page.textContent('body')).to.contain('CreateUserCommand');
    expect(outside, 'requests that left the gateway').to.deep.equal([]);
    expect(errors, 'page errors').to.deep.equal([]);
  });
});
