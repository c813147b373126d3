import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ContractRegistry } from '../../plugin/contracts/registry';
import type { ConfigSync } from '../../plugin/config-writer/config-sync';
import { TestConfigSync } from '../support/config-sync';
import { resolveSettings } from '../../plugin/settings';
import type { Contract } from '../../plugin/contracts/types';
import { ManualClock } from '../support/manual-clock';

const quiet = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

function contract(messageType: string): Contract {
  return {
    messageType,
    targetService: 'svc',
    inputSchema: { type: 'object' },
    outputSchema: {},
    requiredPermissions: [],
  };
}

describe('config writer: write pacing, on a clock the test moves', () => {
  let dir: string;
  let sync: ConfigSync;
  const clock = new ManualClock();
  const registry = new ContractRegistry({ now: () => clock.now() });
  const reloads: number[] = [];
  let n = 0;
  const announce = (): void =>
    void registry.apply({
      service: 'svc',
      instanceId: 'i1',
      ttlMs: 3_600_000,
      contracts: [contract(`Thing${(n += 1)}Command`)],
    });

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'contracts-pacing-'));
    const file = join(dir, 'gateway.config.yml');
    writeFileSync(file, 'apiEndpoints: {}\npipelines: {}\npolicies: []\n');
    const host = {
      config: { gatewayConfigPath: file, loadConfig: () => void reloads.push(clock.now()) },
      eventBus: { emit: () => undefined },
    };
    const settings = resolveSettings({ writeDebounceMs: 100, configWriteIntervalMs: 1000 }, {});
    sync = new TestConfigSync(registry, host, settings, quiet, { clock });
    sync.start();
  });
  after(() => {
    sync.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('writes a change after the debounce, and the next one no sooner than configWriteIntervalMs after it', async () => {
    const start = clock.now();
    reloads.length = 0;
    announce();
    clock.advance(99);
    expect(reloads).to.deep.equal([]);
    clock.advance(1);
    await sync.settled();
    expect(reloads).to.deep.equal([start + 100]);
    // A burst right after: one write, when the interval since the last one has passed.
    for (let i = 0; i < 5; i++) announce();
    clock.advance(999);
    await new Promise((resolve) => setImmediate(resolve));
    expect(reloads).to.have.length(1);
    clock.advance(1);
    await sync.settled();
    expect(reloads).to.deep.equal([start + 100, start + 1100]);
    expect(readFileSync(join(dir, 'gateway.config.yml'), 'utf8')).to.contain(`thing${n}`);
  });
});
