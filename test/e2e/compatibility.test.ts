import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gatewayWithBus, type GatewayWithBus } from '../support/gateway-with-bus';
import { eventually } from '../support/gateway-process';
import { freePort } from '../support/env';
import { httpAs } from '../support/http';
import { mintToken } from '../support/tokens';
import { sample, scrape } from '../observability/support';
import { ROOT, run } from '../packaging/support';
import { serve, type Operation } from '../../sdk';
import { contractHash } from '../../plugin/compat/gate';
import type { Contract } from '../../plugin/contracts/types';

const http = httpAs(['gadgets:read', 'relics:read']);
const CLI = join(ROOT, 'dist', 'plugin', 'cli', 'contracts-gateway.js');

/** GET /api/gadgets/:gadgetId; `emailRequired: false` makes an output property optional, which breaks clients. */
function gadgetOperation(emailRequired: boolean, extra: Partial<Contract> = {}): Operation {
  return {
    contract: {
      messageType: 'GetGadgetQuery',
      inputSchema: { type: 'object', properties: { gadgetId: { type: 'string' } }, required: ['gadgetId'] },
      outputSchema: {
        type: 'object',
        properties: { name: { type: 'string' }, email: { type: 'string' } },
        required: emailRequired ? ['name', 'email'] : ['name'],
      },
      requiredPermissions: ['gadgets:read'],
      ...extra,
    },
    handle: (input) => ({ name: `gadget ${String(input.gadgetId)}`, email: 'g@example.test' }),
  };
}

function served(op: Operation): Contract {
  return { ...op.contract, targetService: 'gadgets' } as Contract;
}

interface Listing {
  contracts: Array<Contract & { messageType: string }>;
  breakingChanges: Array<{
    messageType: string;
    service: string;
    outcome: string;
    previousHash: string;
    hash: string;
    reasons: string[];
  }>;
}

/**
 * Serves v1 of GetGadgetQuery from one instance, then a breaking v2 from a second, as in a rolling deploy; resolves
 * once the gateway lists the breaking change, with what it checks the listing against.
 */
async function rollOutBreakingChange(fx: GatewayWithBus, discovery: () => Promise<Listing>) {
  const v1 = gadgetOperation(true);
  const v2 = gadgetOperation(false);
  const old = await serve({
    transport: fx.transport,
    service: 'gadgets',
    instanceId: 'gadgets-v1',
    ttlMs: 3000,
    operations: [v1],
  });
  fx.running.push(old);
  await eventually(
    async () => expect((await http('GET', `${fx.gw.baseUrl}/api/gadgets/g1`)).status).to.equal(200),
    15_000,
  );
  fx.running.push(
    await serve({
      transport: fx.transport,
      service: 'gadgets',
      instanceId: 'gadgets-v2',
      ttlMs: 3000,
      operations: [v2],
    }),
  );
  const listing = await eventually(async () => {
    const l = await discovery();
    expect(l.breakingChanges).to.have.length(1);
    return l;
  }, 15_000);
  expect(listing.breakingChanges[0]).to.deep.include({
    messageType: 'GetGadgetQuery',
    service: 'gadgets',
    previousHash: contractHash(served(v1)),
    hash: contractHash(served(v2)),
  });
  expect(listing.breakingChanges[0]?.reasons).to.deep.equal(['output.email may be missing now']);
  return { old, listing };
}

describe('breaking changes through a gateway and RabbitMQ (breakingChanges: warn, the default)', function () {
  this.timeout(60_000);
  let metricsPort = 0;
  // Registered before the fixture's hooks, so the port is known when its gateway starts.
  before(async () => (metricsPort = await freePort()));
  const fx = gatewayWithBus(
    {
      START_REFERENCE_SERVICES: 'false',
      // Read when the fixture's hook starts the gateway, after the hook above.
      get METRICS_PORT() {
        return String(metricsPort);
      },
      METRICS_HOST: '127.0.0.1',
    },
    () => mkdtempSync(join(tmpdir(), 'contracts-compat-')),
  );
  const metrics = (): string => `http://127.0.0.1:${metricsPort}/metrics`;
  const discovery = async (): Promise<Listing> =>
    (await http('GET', `${fx.gw.baseUrl}/api/discovery/contracts`)).body as Listing;

  it('serves the breaking change, lists it with the previous hash and the reasons, logs and counts it once', async () => {
    const { listing } = await rollOutBreakingChange(fx, discovery);
    expect(listing.breakingChanges[0]?.outcome).to.equal('accepted');
    expect(listing.contracts.find((c) => c.messageType === 'GetGadgetQuery')?.outputSchema.required).to.deep.equal([
      'name',
    ]);
    // Re-announcements (every second) neither log nor count it again.
    await new Promise((r) => setTimeout(r, 2500));
    expect(fx.gw.output().match(/breaking change to GetGadgetQuery/g)).to.have.length(1);
    expect(
      sample(await scrape(metrics()), 'contracts_gateway_breaking_changes_total', { outcome: 'accepted' }),
    ).to.equal(1);
  });

  it('a deprecated contract answers Deprecation and Sunset, says deprecated in OpenAPI, and counts its calls by route', async () => {
    fx.running.push(
      await serve({
        transport: fx.transport,
        service: 'relics',
        operations: [
          {
            contract: {
              messageType: 'GetRelicQuery',
              inputSchema: { type: 'object', properties: { relicId: { type: 'string' } } },
              outputSchema: { type: 'object' },
              requiredPermissions: ['relics:read'],
              deprecated: true,
              sunset: '2031-01-01',
            },
            handle: () => ({ old: true }),
          },
        ],
      }),
    );
    const res = await eventually(async () => {
      const r = await http('GET', `${fx.gw.baseUrl}/api/relics/r1`);
      expect(r.status, r.text).to.equal(200);
      return r;
    }, 15_000);
    const deprecation = res.headers.get('deprecation') ?? '';
    expect(deprecation).to.match(/^@\d+$/);
    expect(Number(deprecation.slice(1))).to.be.within(
      Math.floor(Date.now() / 1000) - 120,
      Math.floor(Date.now() / 1000),
    );
    expect(res.headers.get('sunset')).to.equal('Wed, 01 Jan 2031 00:00:00 GMT');
    await http('GET', `${fx.gw.baseUrl}/api/relics/r2`);
    const plain = await http('GET', `${fx.gw.baseUrl}/api/gadgets/g1`);
    expect(plain.status).to.equal(200);
    expect(plain.headers.get('deprecation')).to.equal(null);
    expect(plain.headers.get('sunset')).to.equal(null);
    const doc = (await http('GET', `${fx.gw.baseUrl}/api-docs/openapi.json`)).body as {
      paths: Record<string, Record<string, { deprecated?: boolean }>>;
    };
    expect(doc.paths['/api/relics/{relicId}']?.get?.deprecated).to.equal(true);
    expect(doc.paths['/api/gadgets/{gadgetId}']?.get).to.not.have.property('deprecated');
    const scraped = await scrape(metrics());
    expect(sample(scraped, 'contracts_gateway_deprecated_requests_total', { message_type: 'GetRelicQuery' })).to.equal(
      2,
    );
    expect(sample(scraped, 'contracts_gateway_deprecated_requests_total', { route: '/api/relics/:relicId' })).to.equal(
      2,
    );
    expect(sample(scraped, 'contracts_gateway_deprecated_requests_total', { message_type: 'GetGadgetQuery' })).to.equal(
      0,
    );
  });

  it('refuses an announcement whose sunset is not an ISO 8601 date, naming the member', async () => {
    fx.running.push(
      await serve({
        transport: fx.transport,
        service: 'fossils',
        operations: [
          {
            contract: {
              messageType: 'GetFossilQuery',
              inputSchema: {},
              outputSchema: {},
              requiredPermissions: [],
              deprecated: true,
              sunset: 'next spring',
            },
            handle: () => ({}),
          },
        ],
      }),
    );
    await eventually(
      async () =>
        expect(fx.gw.output()).to.match(
          /refused announcement from service fossils instance fossils-[^:]+: contracts\[0\] sunset must be an ISO 8601 date/,
        ),
      15_000,
    );
    expect((await discovery()).contracts.map((c) => c.messageType)).to.not.include('GetFossilQuery');
    expect((await http('GET', `${fx.gw.baseUrl}/api/fossils/f1`)).status).to.equal(404);
  });

  // After the test above: the gateway serves another service's contract too, which the gadgets file must not be held to.
  it('check-compat against the gateway URL compares the services of the file: exit 1 on a breaking change, 0 on a compatible one', async () => {
    expect((await discovery()).contracts.map((c) => c.messageType)).to.include('GetRelicQuery');
    const dir = mkdtempSync(join(tmpdir(), 'check-compat-e2e-'));
    try {
      const env = { CONTRACTS_GATEWAY_TOKEN: await mintToken({ sub: 'ci', permissions: [] }) };
      const next = join(dir, 'next.json');
      writeFileSync(
        next,
        JSON.stringify([served(gadgetOperation(false, { requiredPermissions: ['gadgets:read', 'gadgets:audit'] }))]),
      );
      const breaking = await run(process.execPath, [CLI, 'check-compat', next, '--against', fx.gw.baseUrl], { env });
      expect(breaking.code, breaking.output).to.equal(1);
      expect(breaking.output).to.include(
        'breaking   GetGadgetQuery: permission gadgets:audit required now: callers without it get 403 [permission-added]',
      );
      writeFileSync(next, JSON.stringify([served(gadgetOperation(true))]));
      const compatible = await run(process.execPath, [CLI, 'check-compat', next, '--against', `${fx.gw.baseUrl}/`], {
        env,
      });
      expect(compatible).to.deep.equal({
        code: 0,
        output:
          'compatible GetGadgetQuery: output.email is always present now [output-property-required]\n0 breaking, 1 compatible\n',
      });
      const anonymous = await run(process.execPath, [CLI, 'check-compat', next, '--against', fx.gw.baseUrl], {
        env: { CONTRACTS_GATEWAY_TOKEN: '' },
      });
      expect(anonymous.code).to.equal(2);
      expect(anonymous.output).to.match(
        /^contracts-gateway: GET http:\/\/127\.0\.0\.1:\d+\/api\/discovery\/contracts answered 401; set CONTRACTS_GATEWAY_TOKEN/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('breaking changes through a gateway and RabbitMQ (breakingChanges: refuse)', function () {
  this.timeout(60_000);
  const fx = gatewayWithBus({ START_REFERENCE_SERVICES: 'false', BREAKING_CHANGES: 'refuse' }, () =>
    mkdtempSync(join(tmpdir(), 'contracts-compat-')),
  );
  const discovery = async (): Promise<Listing> =>
    (await http('GET', `${fx.gw.baseUrl}/api/discovery/contracts`)).body as Listing;

  it('keeps the served version, also once the instances that announced it are gone, and lists the refusal', async () => {
    const { old, listing } = await rollOutBreakingChange(fx, discovery);
    expect(listing.breakingChanges[0]?.outcome).to.equal('refused');
    expect(fx.gw.output()).to.match(
      /breaking change to GetGadgetQuery from gadgets refused; the previous version stays served: output\.email may be missing now/,
    );
    await old.stop();
    fx.running.splice(fx.running.indexOf(old), 1);
    await eventually(async () => {
      const l = await discovery();
      const gadget = l.contracts.find((c) => c.messageType === 'GetGadgetQuery') as
        | (Contract & { instances: Array<{ instanceId: string }> })
        | undefined;
      expect(gadget?.instances.map((i) => i.instanceId)).to.deep.equal(['gadgets-v2']);
      expect(gadget?.outputSchema.required).to.deep.equal(['name', 'email']);
    }, 15_000);
    // Still served, by the instance that is left.
    expect((await http('GET', `${fx.gw.baseUrl}/api/gadgets/g1`)).status).to.equal(200);
  });
});
