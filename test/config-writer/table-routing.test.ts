import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { ContractRegistry } from '../../plugin/contracts/registry';
import type { ConfigSync } from '../../plugin/config-writer/config-sync';
import { TestConfigSync } from '../support/config-sync';
import { resolveSettings } from '../../plugin/settings';
import { validateSettings } from '../../plugin/settings/validation';
import type { Logger } from '../../plugin/logger';
import { referenceContracts } from '../openapi/support';
import { buildEndpointSpecs } from '../../plugin/contracts/endpoint-specs';
import { AUTO_TABLE_ABOVE } from '../../plugin/routing/routing-mode';

/** An empty gateway.config.yml in a temporary directory, a registry holding the reference users service, and the writers made on them. */
class WriterFixture {
  readonly dir = mkdtempSync(join(tmpdir(), 'contracts-routing-'));
  readonly file = join(this.dir, 'gateway.config.yml');
  readonly registry = new ContractRegistry();
  private readonly syncs: ConfigSync[] = [];

  constructor() {
    writeFileSync(this.file, 'apiEndpoints: {}\npipelines: {}\npolicies: []\n');
    this.registry.apply({
      service: 'users-service',
      instanceId: 'u1',
      contracts: referenceContracts().filter((c) => c.targetService === 'users-service'),
      ttlMs: 60_000,
    });
  }

  /** A config writer on the file (not started), with these plugin settings. */
  writer(raw: Record<string, unknown>, log: Logger): ConfigSync {
    const host = {
      config: { gatewayConfigPath: this.file, loadConfig: () => undefined },
      eventBus: { emit: () => undefined },
    };
    const sync = new TestConfigSync(this.registry, host, resolveSettings({ writeDebounceMs: 0, ...raw }, {}), log);
    this.syncs.push(sync);
    return sync;
  }

  /** Stops the writers made so far. */
  stopWriters(): void {
    for (const s of this.syncs.splice(0)) s.stop();
  }

  config() {
    return parse(readFileSync(this.file, 'utf8'));
  }

  /** The generated apiEndpoints' names, in file order. */
  generated(): string[] {
    return Object.keys(this.config().apiEndpoints).filter((n) => n.startsWith('contracts-'));
  }

  close(): void {
    this.stopWriters();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

describe('config writer: routing: table', () => {
  let fx: WriterFixture;
  let sync: ConfigSync;
  let file: string;
  let registry: ContractRegistry;
  const warnings: string[] = [];
  const log: Logger = {
    info: () => undefined,
    warn: (m: string) => void warnings.push(m),
    error: () => undefined,
  } as unknown as Logger;

  beforeEach(() => {
    warnings.length = 0;
    fx = new WriterFixture();
    ({ file, registry } = fx);
    sync = fx.writer({ routing: 'table' }, log);
  });
  afterEach(() => fx.close());

  const generated = () => fx.generated();

  it('writes the preflight, one table endpoint and the 404, and leaves the file alone when contracts come and go', async () => {
    sync.start();
    expect(generated()).to.deep.equal(['contracts-options-api', 'contracts-api', 'contracts-not-found']);
    const text = readFileSync(file, 'utf8');
    registry.apply({
      service: 'widgets-service',
      instanceId: 'w1',
      ttlMs: 60_000,
      contracts: [
        {
          messageType: 'GetWidgetQuery',
          targetService: 'widgets-service',
          inputSchema: {},
          outputSchema: {},
          requiredPermissions: [],
        },
      ],
    });
    await sync.settled();
    expect(readFileSync(file, 'utf8')).to.equal(text);
  });

  it('goes back to one endpoint per route while a route has a path the table cannot hold, and says why', async () => {
    sync.start();
    registry.apply({
      service: 'files-service',
      instanceId: 'f1',
      ttlMs: 60_000,
      contracts: [
        {
          messageType: 'DownloadQuery',
          targetService: 'files-service',
          inputSchema: {},
          outputSchema: {},
          requiredPermissions: [],
          http: { method: 'GET', paths: ['/api/files/*'] },
        },
      ],
    });
    await sync.settled();
    expect(generated()).to.include.members(['contracts-get-api-users-userid', 'contracts-get-api-files']);
    expect(generated()).not.to.include('contracts-api');
    expect(warnings.join('\n')).to.contain('/api/files/*');
    registry.apply({ service: 'files-service', instanceId: 'f1', contracts: [], ttlMs: 0, withdrawn: true });
    await sync.settled();
    expect(generated()).to.deep.equal(['contracts-options-api', 'contracts-api', 'contracts-not-found']);
  });

  it('is a setting: auto by default, endpoints or table by plugins.contracts.routing or CONTRACT_ROUTING, anything else refused', () => {
    expect(resolveSettings({}, {}).routing).to.equal('auto');
    expect(resolveSettings({ routing: 'table' }, {}).routing).to.equal('table');
    expect(resolveSettings({ routing: 'endpoints' }, {}).routing).to.equal('endpoints');
    expect(resolveSettings({}, { CONTRACT_ROUTING: 'table' }).routing).to.equal('table');
    expect(() => validateSettings({}, { CONTRACT_ROUTING: 'trie' })).to.throw(
      /CONTRACT_ROUTING must be one of auto, endpoints, table/,
    );
    expect(() => validateSettings({ routing: 'fast' }, {})).to.throw(
      /plugins\.contracts\.routing must be one of auto, endpoints, table/,
    );
  });
});

/** `count` GET routes of one service, each on its own path. */
function bulkContracts(count: number) {
  return Array.from({ length: count }, (_, i) => ({
    messageType: `GetBulk${i}Query`,
    targetService: 'bulk-service',
    inputSchema: {},
    outputSchema: {},
    requiredPermissions: [],
    http: { method: 'GET', paths: [`/api/bulk/items-${i}/:itemId`] },
  }));
}

describe('config writer: routing: auto', () => {
  let fx: WriterFixture;
  let registry: ContractRegistry;
  const infos: string[] = [];
  const log: Logger = {
    info: (m: string) => void infos.push(m),
    warn: () => undefined,
    error: () => undefined,
  } as unknown as Logger;

  beforeEach(() => {
    infos.length = 0;
    fx = new WriterFixture();
    ({ registry } = fx);
  });
  afterEach(() => fx.close());

  const startSync = (raw: Record<string, unknown>) => {
    const sync = fx.writer(raw, log);
    sync.start();
    return sync;
  };
  const config = () => fx.config();
  const generated = () => fx.generated();
  const routeCount = () =>
    generated().filter((n) => !['contracts-options-api', 'contracts-not-found'].includes(n)).length;
  const announceBulk = (count: number) =>
    registry.apply({ service: 'bulk-service', instanceId: 'b1', ttlMs: 60_000, contracts: bulkContracts(count) });

  it(`writes one apiEndpoint per route up to ${AUTO_TABLE_ABOVE} routes, with no route-table step`, () => {
    const usersRoutes = buildEndpointSpecs(registry.contracts()).endpoints.length;
    announceBulk(AUTO_TABLE_ABOVE - usersRoutes);
    startSync({});
    expect(routeCount()).to.equal(AUTO_TABLE_ABOVE);
    expect(generated()).to.include('contracts-get-api-users-userid');
    expect(generated()).not.to.include('contracts-api');
    expect(config().policies).not.to.include('route-table');
  });

  it('switches to the table endpoint above that, back when routes go, and logs each switch', async () => {
    const usersRoutes = buildEndpointSpecs(registry.contracts()).endpoints.length;
    const sync = startSync({});
    expect(generated()).to.include('contracts-get-api-users-userid');
    announceBulk(AUTO_TABLE_ABOVE - usersRoutes + 1);
    await sync.settled();
    expect(generated()).to.deep.equal(['contracts-options-api', 'contracts-api', 'contracts-not-found']);
    expect(
      config().pipelines['contracts-api'].policies.map((s: Record<string, unknown>) => Object.keys(s)[0])[0],
    ).to.equal('route-table');
    expect(config().policies).to.include('route-table');
    expect(infos.join('\n')).to.contain(
      `routing: auto: ${AUTO_TABLE_ABOVE + 1} routes, one apiEndpoint for all of them`,
    );
    registry.apply({ service: 'bulk-service', instanceId: 'b1', contracts: [], ttlMs: 0, withdrawn: true });
    await sync.settled();
    expect(generated()).to.include('contracts-get-api-users-userid');
    expect(generated()).not.to.include('contracts-api');
    expect(infos.join('\n')).to.contain(`routing: auto: ${usersRoutes} routes, one apiEndpoint per route again`);
  });

  it('is overridden by an explicit mode: endpoints keeps one per route however many there are, table uses the table for few', () => {
    announceBulk(AUTO_TABLE_ABOVE * 2);
    startSync({ routing: 'endpoints' });
    expect(routeCount()).to.be.greaterThan(AUTO_TABLE_ABOVE * 2);
    registry.apply({ service: 'bulk-service', instanceId: 'b1', contracts: [], ttlMs: 0, withdrawn: true });
    fx.stopWriters();
    startSync({ routing: 'table' });
    expect(generated()).to.deep.equal(['contracts-options-api', 'contracts-api', 'contracts-not-found']);
  });
});
