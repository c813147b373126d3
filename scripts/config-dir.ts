import { copyFileSync, existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Makes a working config directory from the shipped defaults, copying only what is missing: the plugin
 * rewrites gateway.config.yml there, and hand edits made there are kept across starts.
 */
export function ensureConfigDir(target: string, defaults: string): void {
  mkdirSync(target, { recursive: true });
  for (const entry of readdirSync(defaults)) {
    const from = join(defaults, entry);
    const to = join(target, entry);
    if (statSync(from).isDirectory()) ensureConfigDir(to, from);
    else if (!existsSync(to)) copyFileSync(from, to);
  }
}
