import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { SETTINGS_SCHEMA } from '../../plugin/settings';
import { SETTING_ENV } from '../../plugin/settings-validation';

/** docs/configuration.md holds the one settings table: it must list exactly the settings the plugin knows. */
const doc = readFileSync(join(__dirname, '..', '..', '..', 'docs', 'configuration.md'), 'utf8');

function settingsTable(): Map<string, string> {
  const start = doc.indexOf('\n## Plugin settings\n');
  const end = doc.indexOf('\n## ', start + 1);
  const rows = new Map<string, string>();
  for (const m of doc.slice(start, end).matchAll(/^\| `([A-Za-z]+)` \| (?:`([A-Z_]+)` )?\|/gm)) rows.set(m[1] as string, m[2] ?? '');
  return rows;
}

describe('docs/configuration.md against the settings schema', () => {
  it('has one row per plugin setting, and none for a setting that does not exist', () => {
    expect([...settingsTable().keys()].sort()).to.deep.equal(Object.keys(SETTINGS_SCHEMA.properties).sort());
  });

  it('names the environment variable each setting reads, and none where there is none', () => {
    for (const [setting, env] of settingsTable()) expect(env, setting).to.equal(SETTING_ENV[setting] ?? '');
  });
});
