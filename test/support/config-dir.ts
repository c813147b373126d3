import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const CONFIG_DEFAULTS = resolve(__dirname, '..', '..', '..', 'config');

/** A gateway config directory: the project's system.config.yml and models, and the given gateway.config.yml text. */
export function configDirWithGateway(gatewayYaml: string, label = 'contracts-config-'): string {
  const dir = mkdtempSync(join(tmpdir(), label));
  copyFileSync(join(CONFIG_DEFAULTS, 'system.config.yml'), join(dir, 'system.config.yml'));
  mkdirSync(join(dir, 'models'));
  for (const f of readdirSync(join(CONFIG_DEFAULTS, 'models')))
    copyFileSync(join(CONFIG_DEFAULTS, 'models', f), join(dir, 'models', f));
  writeFileSync(join(dir, 'gateway.config.yml'), gatewayYaml);
  return dir;
}
