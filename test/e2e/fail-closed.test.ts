import { expect } from 'chai';
import { copyFileSync, cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseDocument } from 'yaml';
import { eventually } from '../support/gateway-process';
import { gatewayWithBus } from '../support/gateway-with-bus';
import { http, httpAs } from '../support/http';
import { TEST_JWT_SECRET } from '../support/tokens';
import { ROOT, run } from '../packaging/support';
import { serve } from '../../sdk';
import { INVALID_SETTINGS_EXIT_CODE } from '../../plugin/settings/startup';
import { freePort } from '../support/env';

/** A config directory with the shipped system config and this gateway.config.yml. */
function configDirWith(gatewayConfig: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'contracts-fail-closed-'));
  copyFileSync(join(ROOT, 'config', 'system.config.yml'), join(dir, 'system.config.yml'));
  cpSync(join(ROOT, 'config', 'models'), join(dir, 'models'), { recursive: true });
  writeFileSync(join(dir, 'gateway.config.yml'), gatewayConfig);
  return dir;
}

/** deploy/gateway.config.example.yml with the orders-create pipeline's permission step replaced by `line`. */
function exampleWithPermission(line: string): string {
  const example = readFileSync(join(ROOT, 'deploy', 'gateway.config.example.yml'), 'utf8');
  const step = "      - permission:\n          - action: { required: ['orders:create'] }\n";
  expect(example).to.include(step);
  return example.replace(step, `${line}\n`);
}

/** `node dist/scripts/start.js` without the reference services, to its end (these starts must not get far). */
async function startToEnd(configDir: string, env: Record<string, string | undefined>) {
  try {
    return await run(process.execPath, [join(ROOT, 'dist', 'scripts', 'start.js')], {
      env: {
        JWT_SECRET: TEST_JWT_SECRET,
        JWKS_URI: undefined,
        BUS_URL: 'embedded',
        START_REFERENCE_SERVICES: 'false',
        // A port of its own in case a start gets further than it should (PORT=0 is refused as not a port).
        PORT: String(await freePort()),
        LOG_LEVEL: 'warn',
        EG_CONFIG_DIR: configDir,
        ...env,
      },
      timeoutMs: 30000,
    });
  } finally {
    rmSync(configDir, { recursive: true, force: true });
  }
}

/** The one line of `output` that says why the start stopped; fails unless it is exactly one, with no stack. */
function theOneLine(output: string, mark: string): string {
  const lines = output.split('\n').filter((l) => l.includes(mark));
  expect(lines, output).to.have.length(1);
  expect(output).not.to.match(/\n\s+at |POLICY_PARAMS_VALIDATION_FAILED/);
  return lines[0];
}

describe('a slip in a hand-written pipeline stops the start', function () {
  this.timeout(60000);

  it("the issue's typo `requried` stops the gateway with one line naming the key, the step and the key meant", async () => {
    const r = await startToEnd(
      configDirWith(exampleWithPermission("      - permission: [ action: { requried: ['orders:create'] } ]")),
      {},
    );
    expect(r.code, r.output).to.equal(INVALID_SETTINGS_EXIT_CODE);
    expect(theOneLine(r.output, 'requried')).to.match(
      /^\[contracts\] \/.*\/gateway\.config\.yml: pipeline "orders-create", step permission: unknown key "requried" \(did you mean "required"\?\)\. The gateway does not start\.$/,
    );
  });

  it('a permission step with nothing to check (no `required`, `public: true` nor a contract) stops the gateway', async () => {
    const r = await startToEnd(configDirWith(exampleWithPermission('      - permission:')), {});
    expect(r.code, r.output).to.equal(INVALID_SETTINGS_EXIT_CODE);
    expect(theOneLine(r.output, 'step permission')).to.include(
      'pipeline "orders-create", step permission: its action has neither `required`, `public: true` nor a `messageType`',
    );
  });
});

// The quick start without JWT_SECRET (a generated secret, kept in the data directory) is test/e2e/restart.test.ts.
describe('no key to verify tokens with, no bus URL', function () {
  this.timeout(90000);

  it('a gateway with jwt-dev-auth and neither JWT_SECRET nor JWKS_URI stops with one line', async () => {
    const r = await startToEnd(configDirWith(readFileSync(join(ROOT, 'config', 'gateway.config.yml'), 'utf8')), {
      JWT_SECRET: undefined,
    });
    expect(r.code, r.output).to.equal(INVALID_SETTINGS_EXIT_CODE);
    expect(theOneLine(r.output, 'JWT_SECRET')).to.match(
      /^\[contracts\] .*gateway\.config\.yml: jwt-dev-auth of the generated routes has no key to verify tokens with: set JWT_SECRET \(HS256\) or JWKS_URI \(RS256\), or jwtSecret \/ jwksUri on its action\. The gateway does not start\.$/,
    );
  });

  it('an SDK service started without BUS_URL stops with one line and a non-zero exit, instead of serving an in-process bus', async () => {
    const r = await run(process.execPath, [join(ROOT, 'dist', 'test', 'support', 'nap-service.js')], {
      env: { BUS_URL: undefined },
      timeoutMs: 20000,
    });
    expect(r.code, r.output).to.equal(1);
    expect(r.output).not.to.include('ready');
    expect(theOneLine(r.output, 'BUS_URL')).to.equal(
      "[nap-service] start failed: no bus URL: set BUS_URL to amqp://user:pass@host:5672 (or to embedded for a service in the gateway's own process)",
    );
  });
});

/** Hand-written pipelines of jwt-dev-auth and contract-router only, and what a reload with a slip does to them. */
const ROUTER_ONLY = `
http:
  port: \${PORT:-8080}
  hostname: \${HOST:-127.0.0.1}
apiEndpoints:
  orders:
    paths: '/orders'
    methods: [POST]
  open-orders:
    paths: '/open-orders'
    methods: [POST]
policies:
  - jwt-dev-auth
  - permission
  - contract-router
pipelines:
  orders:
    apiEndpoints: [orders]
    policies:
      - jwt-dev-auth:
      - contract-router:
          - action:
              messageType: CreateOrderCommand
  open-orders:
    apiEndpoints: [open-orders]
    policies:
      - jwt-dev-auth:
      - contract-router:
          - action:
              messageType: CreateOrderCommand
              public: true
`;

describe('contract-router enforces the contract in a hand-written pipeline', function () {
  this.timeout(90000);
  const fixture = gatewayWithBus({ LOG_LEVEL: 'warn' }, () => configDirWith(ROUTER_ONLY));
  let calls = 0;

  before(async () => {
    fixture.running.push(
      await serve({
        transport: fixture.transport,
        service: 'orders-service',
        operations: [
          {
            contract: {
              messageType: 'CreateOrderCommand',
              inputSchema: { type: 'object' },
              outputSchema: { type: 'object' },
              requiredPermissions: ['orders:create'],
            },
            handle: async () => {
              calls += 1;
              return { orderId: `o-${calls}` };
            },
          },
        ],
      }),
    );
    await eventually(
      async () =>
        expect((await httpAs(['orders:create'])('POST', `${fixture.gw.baseUrl}/orders`, { body: {} })).status).to.equal(
          201,
        ),
      15000,
    );
    // The contract's generated route is written into the file some time after the hand-written one answers; a test
    // editing the file before that write could see its edit read over by it.
    await eventually(
      async () => expect(readFileSync(join(fixture.configDir, 'gateway.config.yml'), 'utf8')).to.include('/api/orders'),
      15000,
      200,
    );
  });

  it('jwt-dev-auth + contract-router: 401 without a token, 403 naming the permission without it, served with it', async () => {
    const before = calls;
    const none = await http('POST', `${fixture.gw.baseUrl}/orders`, { body: {} });
    expect(none.status).to.equal(401);
    const without = await httpAs(['orders:read'])('POST', `${fixture.gw.baseUrl}/orders`, { body: {} });
    expect(without.status, without.text).to.equal(403);
    expect(without.body).to.include({ code: 'INSUFFICIENT_PERMISSIONS', requiredPermission: 'orders:create' });
    expect(calls, 'the service never saw the refused requests').to.equal(before);
    const ok = await httpAs(['orders:create'])('POST', `${fixture.gw.baseUrl}/orders`, { body: {} });
    expect(ok.status, ok.text).to.equal(201);
    expect(calls).to.equal(before + 1);
  });

  it('`public: true` on contract-router serves the contract without its permission check', async () => {
    const res = await httpAs(['orders:read'])('POST', `${fixture.gw.baseUrl}/open-orders`, { body: {} });
    expect(res.status, res.text).to.equal(201);
  });

  it('a reload with the typo is refused, one line logged, and the route keeps refusing; the next good reload applies', async () => {
    const file = join(fixture.configDir, 'gateway.config.yml');
    const edit = (policies: unknown[]) => {
      const doc = parseDocument(readFileSync(file, 'utf8'));
      doc.setIn(['pipelines', 'orders', 'policies'], doc.createNode(policies));
      writeFileSync(file, doc.toString());
    };
    // Had the typo's step been built, the router's `public: true` would serve anyone.
    const routerPublic = { 'contract-router': [{ action: { messageType: 'CreateOrderCommand', public: true } }] };
    edit([{ 'jwt-dev-auth': null }, { permission: [{ action: { requried: ['orders:create'] } }] }, routerPublic]);
    await eventually(async () => expect(fixture.gw.output()).to.include('this reload is refused'), 20000, 200);
    const refused = fixture.gw
      .output()
      .split('\n')
      .filter((l) => l.includes('this reload is refused'));
    expect(refused[0]).to.match(
      /gateway\.config\.yml: pipeline "orders", step permission: unknown key "requried" \(did you mean "required"\?\); this reload is refused, the routes loaded before stay$/,
    );
    const after = await httpAs(['orders:read'])('POST', `${fixture.gw.baseUrl}/orders`, { body: {} });
    expect(after.status, after.text).to.equal(403);

    edit([{ 'jwt-dev-auth': null }, routerPublic]);
    await eventually(
      async () =>
        expect((await httpAs(['orders:read'])('POST', `${fixture.gw.baseUrl}/orders`, { body: {} })).status).to.equal(
          201,
        ),
      20000,
      250,
    );
  });
});
