import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { startGateway, eventually, type GatewayProcess } from '../support/gateway-process';
import { AMQP_URL } from '../support/env';
import { AmqpTransport } from '../../plugin/bus/amqp';
import { serve, answer, type RunningService } from '../../sdk';

const CHROMIUM = '/usr/bin/chromium';
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Debian's chromium, installed when missing; the reason it is not there otherwise. */
function ensureChromium(): string | undefined {
  if (existsSync(CHROMIUM)) return undefined;
  try {
    execFileSync('apt-get', ['install', '-y', '-qq', 'chromium'], {
      stdio: 'ignore',
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
      timeout: 240_000,
    });
  } catch (err) {
    return `apt-get install -y chromium failed (${err instanceof Error ? err.message.split('\n')[0] : String(err)})`;
  }
  return existsSync(CHROMIUM) ? undefined : `${CHROMIUM} is still missing after apt-get install`;
}

/** Markup a contract's author controls, meant to run in a reader's browser: each would set window.__pwned. */
const MARKUP = [
  '<script>window.__pwned = "script"</script>',
  '<img src="x" onerror="window.__pwned = \'onerror\'">',
  '<a href="javascript:window.__pwned = \'link\'">a link</a>',
  '<svg onload="window.__pwned = \'svg\'"></svg>',
  '<iframe srcdoc="<script>parent.__pwned = 1</script>"></iframe>',
  '**inert-marker**',
].join(' ');

describe('the docs page in a browser', function () {
  this.timeout(60000);
  let gw: GatewayProcess | undefined;
  let transport: AmqpTransport | undefined;
  let probe: RunningService | undefined;
  let context: BrowserContext | undefined;
  let profile: string | undefined;
  /** Another origin, standing for an attacker's host: every request it gets is recorded. */
  let attacker: Server | undefined;
  let attackerOrigin = '';
  const attackerHits: string[] = [];

  before(async function () {
    this.timeout(300_000);
    const missing = ensureChromium();
    if (missing) {
      console.log(`      skipped: Chromium is not available: ${missing}`);
      this.skip();
    }
    attacker = createServer((req, res) => {
      attackerHits.push(req.url ?? '');
      res.setHeader('Access-Control-Allow-Origin', '*');
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify({ type: 'string', description: 'fetched from the attacker' }));
    });
    await new Promise<void>((r) => attacker!.listen(0, '127.0.0.1', () => r()));
    attackerOrigin = `http://127.0.0.1:${(attacker.address() as AddressInfo).port}`;

    gw = await startGateway({ BUS_URL: AMQP_URL });
    transport = new AmqpTransport(AMQP_URL, { prefix: gw.prefix });
    await transport.start();
    probe = await serve({
      transport,
      service: 'probe-service',
      operations: [
        {
          contract: {
            messageType: 'CreateProbeCommand',
            inputSchema: {
              type: 'object',
              description: MARKUP,
              properties: { name: { type: 'string', description: MARKUP } },
            },
            outputSchema: { type: 'object', properties: { probeId: { type: 'string' } } },
            requiredPermissions: ['probes:create'],
          },
          handle: () => answer({ probeId: 'p1' }),
        },
        {
          contract: {
            messageType: 'CreateRemoteCommand',
            inputSchema: { type: 'object', properties: { x: { $ref: `${attackerOrigin}/schema.json` } } },
            outputSchema: { type: 'object' },
            requiredPermissions: ['remotes:create'],
          },
          handle: () => answer({}),
        },
        {
          contract: {
            messageType: 'CreatePixelCommand',
            inputSchema: {
              type: 'object',
              description: `![pixel](${attackerOrigin}/pixel.png) <img src="${attackerOrigin}/img.png">`,
            },
            outputSchema: { type: 'object' },
            requiredPermissions: ['pixels:create'],
          },
          handle: () => answer({}),
        },
      ],
    });
    // The probe's contracts are in the document, the remote $ref refused (listed in the discovery answer).
    await eventually(
      async () => {
        const doc = (await (await fetch(`${gw!.baseUrl}/api-docs/openapi.json`)).json()) as {
          paths: Record<string, unknown>;
        };
        expect(doc.paths).to.include.keys('/api/probes', '/api/pixels', '/api/users');
        expect(doc.paths).not.to.have.property('/api/remotes');
      },
      20000,
      200,
    );
    profile = mkdtempSync(join(tmpdir(), 'contracts-chromium-'));
    // The fresh profile is Chromium's --user-data-dir: playwright passes it itself and refuses it among the args.
    context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: ARGS });
    // Recorded in the page before any of its scripts run (an init script is the browser's, not the page's: the CSP
    // does not apply to it).
    await context.addInitScript({
      content:
        "window.__violations = []; document.addEventListener('securitypolicyviolation', (e) => window.__violations.push({ directive: e.effectiveDirective, blocked: e.blockedURI, sample: e.sample }));",
    });
  });
  after(async () => {
    await context?.close();
    await probe?.stop();
    await transport?.close();
    await gw?.stop();
    await new Promise<void>((r) => (attacker ? attacker.close(() => r()) : r()));
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  interface Violation {
    directive: string;
    blocked: string;
    /** The start of a blocked inline script (the page's CSP asks for 'report-sample'). */
    sample: string;
  }

  async function violations(page: Page): Promise<Violation[]> {
    return (await page.evaluate('window.__violations')) as Violation[];
  }

  /** A page on the docs, with what it asked of other origins and what the console said about the CSP. */
  async function openDocs(): Promise<{ page: Page; outside: string[]; cspConsole: string[]; errors: string[] }> {
    const base = gw!.baseUrl;
    const outside: string[] = [];
    const page = await context!.newPage();
    // Anything not from the gateway is remembered, then let through: the attacker's server records what arrives.
    await page.route('**/*', (route) => {
      const url = route.request().url();
      if (!url.startsWith(base) && !url.startsWith('data:')) outside.push(url);
      return route.continue();
    });
    const cspConsole: string[] = [];
    const errors: string[] = [];
    page.on('console', (m) => {
      if (/Content[- ]Security[- ]Policy/i.test(m.text())) cspConsole.push(m.text());
    });
    page.on('pageerror', (e) => errors.push(e.message));
    const specLoaded = page.waitForResponse((r) => r.url() === `${base}/api-docs/openapi.json` && r.status() === 200);
    const response = await page.goto(`${base}/api-docs`);
    expect(response?.status()).to.equal(200);
    const csp = response!.headers()['content-security-policy'];
    expect(csp).to.include("default-src 'none'").and.include("script-src 'self'").and.include("frame-ancestors 'none'");
    expect(csp, 'no inline script allowed').not.to.include('unsafe-inline');
    expect(response!.headers()['x-content-type-options']).to.equal('nosniff');
    expect(response!.headers()['referrer-policy']).to.equal('no-referrer');
    await specLoaded;
    await page.waitForSelector('.opblock', { timeout: 20000 });
    return { page, outside, cspConsole, errors };
  }

  /** Opens a schema of the Schemas section whole, so that its descriptions are rendered. */
  async function expandSchema(page: Page, name: string): Promise<void> {
    const title = page.locator('.json-schema-2020-12__title', { hasText: name });
    const schema = page
      .locator('section.models article.json-schema-2020-12[data-json-schema-level="0"]')
      .filter({ has: title });
    await schema.scrollIntoViewIfNeeded();
    await schema.locator('.json-schema-2020-12-expand-deep-button').first().click();
    await schema.locator('.json-schema-2020-12-keyword--description').first().waitFor({ timeout: 10000 });
  }

  it('renders the operations under a strict CSP with no violation, markup inert, nothing fetched from elsewhere', async () => {
    const { page, outside, cspConsole, errors } = await openDocs();
    const rendered = await page.$$eval('.opblock', (blocks) =>
      blocks.map(
        (b) =>
          `${b.querySelector('.opblock-summary-method')?.textContent?.trim()} ${b.querySelector('.opblock-summary-path')?.getAttribute('data-path') ?? b.querySelector('.opblock-summary-path')?.textContent?.trim()}`,
      ),
    );
    for (const op of [
      'POST /api/users',
      'GET /api/users',
      'GET /api/users/{userId}',
      'PUT /api/users/{userId}',
      'DELETE /api/users/{userId}',
      'POST /api/probes',
    ]) {
      expect(rendered, `${op} is on the page`).to.include(op);
    }
    expect(
      rendered.some((op) => op.includes('/api/remotes')),
      'the contract with a remote $ref is not served',
    ).to.equal(false);
    const tags = await page.$$eval('.opblock-tag', (els) => els.map((e) => e.getAttribute('data-tag')));
    expect(tags).to.include.members(['users-service', 'probe-service']);
    expect(await page.textContent('body')).to.contain('CreateUserCommand');

    // Swagger UI itself needs nothing the policy refuses.
    expect(await violations(page), 'CSP violations of Swagger UI').to.deep.equal([]);
    expect(cspConsole, 'CSP messages on the console').to.deep.equal([]);

    await expandSchema(page, 'CreateProbeCommand.Input');
    await page.getByText('inert-marker').first().waitFor({ timeout: 10000 });
    // Give an injected handler a moment to fire, had the markup kept one.
    await page.waitForTimeout(500);
    expect(await page.evaluate('window.__pwned'), 'markup ran').to.equal(undefined);
    // Swagger UI's sanitiser parses a description in a document that inherits the page's policy, and Chromium reports
    // the inline handlers it meets there, though none could run there (nor does one without the policy). Nothing
    // else is refused.
    const handlers = new Set(["window.__pwned = 'onerror'", "window.__pwned = 'svg'"]);
    for (const v of await violations(page)) {
      expect(v.directive, JSON.stringify(v)).to.equal('script-src-attr');
      expect(handlers.has(v.sample), `a handler of the contract's markup: ${JSON.stringify(v)}`).to.equal(true);
    }
    expect(outside, 'requests that left the gateway').to.deep.equal([]);
    expect(attackerHits, 'requests the attacker got').to.deep.equal([]);
    expect(errors, 'page errors').to.deep.equal([]);
    await page.close();
  });

  it('blocks an image a contract points at another origin: a CSP violation, and the attacker gets nothing', async () => {
    const { page } = await openDocs();
    await expandSchema(page, 'CreatePixelCommand.Input');
    const blocked = await eventually(
      async () => {
        const v = await violations(page);
        expect(v).not.to.be.empty;
        return v;
      },
      10000,
      100,
    );
    for (const v of blocked)
      expect(`${v.directive} ${v.blocked}`, "only the contract's images are blocked").to.match(
        new RegExp(`^img-src ${attackerOrigin}/(pixel|img)\\.png$`),
      );
    expect(attackerHits).to.deep.equal([]);
    await page.close();
  });
});
