import { expect } from 'chai';
import express from 'express';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { testRuntime } from '../support/runtime';
import { mintToken, TEST_JWT_SECRET } from '../support/tokens';
import { discoveryHandler } from '../../plugin/operations/discovery';
import { gatewayConfigOf } from '../../plugin/host/express-gateway';
import type { Runtime } from '../../plugin/runtime';
import type { Contract } from '../../plugin/contracts/types';
import * as endpointSpecs from '../../plugin/contracts/endpoint-specs';

/** Counts every derivation of routes in the process, whoever makes it (the module's export, wrapped). */
const derivations = { count: 0 };
function countDerivations(): () => void {
  const exports = endpointSpecs as { buildEndpointSpecs: typeof endpointSpecs.buildEndpointSpecs };
  const original = exports.buildEndpointSpecs;
  exports.buildEndpointSpecs = (...args) => {
    derivations.count += 1;
    return original(...args);
  };
  return () => (exports.buildEndpointSpecs = original);
}

function contract(messageType: string): Contract {
  return {
    messageType,
    targetService: 'orders',
    inputSchema: { type: 'object', properties: { orderId: { type: 'string' } } },
    outputSchema: {},
    requiredPermissions: [],
  };
}

describe('the route plan: routes derived once per registry change, for every reader', () => {
  let runtime: Runtime;
  let dir: string;
  let server: http.Server;
  let base: string;
  const secretBefore = process.env.JWT_SECRET;
  let uncount: (() => void) | undefined;

  before(async () => {
    uncount = countDerivations();
    process.env.JWT_SECRET = TEST_JWT_SECRET;
    dir = mkdtempSync(join(tmpdir(), 'contracts-plan-'));
    const file = join(dir, 'gateway.config.yml');
    writeFileSync(file, 'apiEndpoints: {}\npipelines: {}\npolicies: []\n');
    runtime = testRuntime({
      writeConfig: true,
      writeDebounceMs: 0,
      configWriteIntervalMs: 0,
      routing: 'table',
      generatedPrefix: 'gen-',
    });
    runtime.attachHost(
      gatewayConfigOf({
        config: { gatewayConfigPath: file, loadConfig: () => undefined },
        eventBus: { emit: () => undefined },
      }),
    );
    const app = express();
    app.get('/api/discovery/contracts', discoveryHandler(runtime));
    server = http.createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    uncount?.();
    await new Promise((resolve) => server?.close(resolve));
    await runtime?.close();
    rmSync(dir, { recursive: true, force: true });
    if (secretBefore === undefined) delete process.env.JWT_SECRET;
    else process.env.JWT_SECRET = secretBefore;
  });

  /** Every reader of the routes, as a request or a change makes them read: writer, path table, OpenAPI, discovery. */
  async function readEverywhere(): Promise<{
    written: string;
    discovered: Array<{ messageType: string; endpoints: unknown[] }>;
  }> {
    await runtime.session.routesWritten();
    runtime.services.pathTable();
    runtime.documents.openApi.current();
    const res = await fetch(`${base}/api/discovery/contracts`, {
      headers: { authorization: `Bearer ${await mintToken()}` },
    });
    expect(res.status).to.equal(200);
    const body = (await res.json()) as { contracts: Array<{ messageType: string; endpoints: unknown[] }> };
    return { written: readFileSync(join(dir, 'gateway.config.yml'), 'utf8'), discovered: body.contracts };
  }

  it('derives the routes once per change however many read them, and each reads the same routes', async () => {
    const announce = (contracts: Contract[]): void =>
      void runtime.discovery.registry.apply({ service: 'orders', instanceId: 'o1', ttlMs: 60_000, contracts });
    announce([contract('GetOrderQuery')]);
    const before = runtime.discovery.routes.derivations();
    derivations.count = 0;
    const first = await readEverywhere();
    await readEverywhere();
    expect(runtime.discovery.routes.derivations() - before).to.equal(1);
    expect(derivations.count, 'derivations by anyone').to.equal(1);
    expect(first.discovered.map((c) => c.messageType)).to.deep.equal(['GetOrderQuery']);
    expect(runtime.services.pathTable().match('GET', '/api/orders/o-1')).to.not.equal(undefined);
    expect(JSON.parse(runtime.documents.openApi.current().json).paths).to.have.property('/api/orders/{orderId}');

    announce([contract('GetOrderQuery'), contract('ListOrdersQuery')]);
    const second = await readEverywhere();
    expect(runtime.discovery.routes.derivations() - before).to.equal(2);
    expect(derivations.count, 'derivations by anyone').to.equal(2);
    expect(second.discovered.map((c) => c.messageType)).to.deep.equal(['GetOrderQuery', 'ListOrdersQuery']);
    expect(second.written).to.contain('gen-');
    expect(JSON.parse(runtime.documents.openApi.current().json).paths).to.have.property('/api/orders');
    // Re-announcing the same contracts is no change: nothing is derived again.
    announce([contract('GetOrderQuery'), contract('ListOrdersQuery')]);
    await readEverywhere();
    expect(runtime.discovery.routes.derivations() - before).to.equal(2);
  });
});
