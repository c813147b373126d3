import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { ContractRegistry } from '../../plugin/contracts/registry';
import { ConfigSync } from '../../plugin/config-writer/config-sync';
import { resolveSettings } from '../../plugin/settings';
import { validateSettings } from '../../plugin/settings-validation';
import type { Logger } from '../../plugin/logger';
import { referenceContracts } from '../openapi/support';

describe('config writer: routing: table', () => {
  let dir: string;
  let file: string;
  let registry: ContractRegistry;
  let sync: ConfigSync;
  const warnings: string[] = [];
  const log: Logger = { info: () => undefined, warn: (m: string) => void warnings.push(m), error: () => undefined } as unknown as Logger;

  beforeEach(() => {
    warnings.length = 0;
    dir = mkdtempSync(join(tmpdir(), 'contracts-table-'));
    file = join(dir, 'gateway.config.yml');
    writeFileSync(file, 'apiEndpoints: {}\npipelines: {}\npolicies: []\n');
    registry = new ContractRegistry();
    registry.apply({ service: 'users-service', instanceId: 'u1', contracts: referenceContracts().filter((c) => c.targetService === 'users-service'), ttlMs: 60_000 });
    const host = { config: { gatewayConfigPath: file, loadConfig: () => undefined }, eventBus: { emit: () => undefined } };
    sync = new ConfigSync(registry, host, resolveSettings({ writeDebounceMs: 0, routing: 'table' }, {}), log);
  });
  afterEach(() => {
    sync.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const generated = () => Object.keys(parse(readFileSync(file, 'utf8')).apiEndpoints).filter((n) => n.startsWith('contracts-'));

  it('writes the preflight, one table endpoint and the 404, and leaves the file alone when contracts come and go', async () => {
    sync.start();
    expect(generated()).to.deep.equal(['contracts-options-api', 'contracts-api', 'contracts-not-found']);
    const text = readFileSync(file, 'utf8');
    registry.apply({
      service: 'widgets-service', instanceId: 'w1', ttlMs: 60_000,
      contracts: [{ messageType: 'GetWidgetQuery', targetService: 'widgets-service', inputSchema: {}, outputSchema: {}, requiredPermissions: [] }],
    });
    await sync.settled();
    expect(readFileSync(file, 'utf8')).to.equal(text);
  });

  it('goes back to one endpoint per route while a route has a path the table cannot hold, and says why', async () => {
    sync.start();
    registry.apply({
      service: 'files-service', instanceId: 'f1', ttlMs: 60_000,
      contracts: [{ messageType: 'DownloadQuery', targetService: 'files-service', inputSchema: {}, outputSchema: {}, requiredPermissions: [], http: { method: 'GET', paths: ['/api/files/*'] } }],
    });
    await sync.settled();
    expect(generated()).to.include.members(['contracts-get-api-users-userid', 'contracts-get-api-files']);
    expect(generated()).not.to.include('contracts-api');
    expect(warnings.join('\n')).to.contain('/api/files/*');
    registry.apply({ service: 'files-service', instanceId: 'f1', contracts: [], ttlMs: 0, withdrawn: true });
    await sync.settled();
    expect(generated()).to.deep.equal(['contracts-options-api', 'contracts-api', 'contracts-not-found']);
  });

  it('is a setting: endpoints by default, table by plugins.contracts.routing or CONTRACT_ROUTING, anything else refused', () => {
    expect(resolveSettings({}, {}).routing).to.equal('endpoints');
    expect(resolveSettings({ routing: 'table' }, {}).routing).to.equal('table');
    expect(resolveSettings({}, { CONTRACT_ROUTING: 'table' }).routing).to.equal('table');
    expect(() => validateSettings({}, { CONTRACT_ROUTING: 'trie' })).to.throw(/CONTRACT_ROUTING must be one of endpoints, table/);
    expect(() => validateSettings({ routing: 'fast' }, {})).to.throw(/plugins\.contracts\.routing must be one of endpoints, table/);
  });
});
