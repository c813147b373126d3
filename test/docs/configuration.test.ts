import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { resolveSettings, SETTINGS_SCHEMA } from '../../plugin/settings';
import { SETTING_ENV } from '../../plugin/settings/declarations';
import { validateSettings } from '../../plugin/settings/validation';
import { LIMIT_SETTINGS } from '../../plugin/settings/bus-trust';
import { withSettingsTable } from '../../scripts/settings-docs';

/** docs/configuration.md holds the one settings table: it must list exactly the settings the plugin knows. */
const doc = readFileSync(join(__dirname, '..', '..', '..', 'docs', 'configuration.md'), 'utf8');

function settingsTable(): Map<string, string> {
  const start = doc.indexOf('\n## Plugin settings\n');
  const end = doc.indexOf('\n## ', start + 1);
  const rows = new Map<string, string>();
  for (const m of doc.slice(start, end).matchAll(/^\| `([A-Za-z]+)` \| (?:`([A-Z_]+)` )?\|/gm))
    rows.set(m[1] as string, m[2] ?? '');
  return rows;
}

describe('docs/configuration.md against the settings schema', () => {
  it('holds the table npm run docs:settings writes from the declarations (plugin/settings/declarations.ts)', () => {
    expect(withSettingsTable(doc), 'run npm run docs:settings').to.equal(doc);
  });

  it('tells a table edited by hand from the declarations', () => {
    const edited = doc.replace(
      '| `busPrefix` | `BUS_PREFIX` | `contracts` |',
      '| `busPrefix` | `BUS_PREFIX` | `gateway` |',
    );
    expect(edited).to.not.equal(doc);
    expect(withSettingsTable(edited)).to.equal(doc);
  });

  it('has one row per plugin setting, and none for a setting that does not exist', () => {
    expect([...settingsTable().keys()].sort()).to.deep.equal(Object.keys(SETTINGS_SCHEMA.properties).sort());
  });

  it('names the environment variable each setting reads, and none where there is none', () => {
    for (const [setting, env] of settingsTable()) expect(env, setting).to.equal(SETTING_ENV[setting] ?? '');
  });
});

/** The table's default column: setting → the cell's text. */
function defaultsColumn(): Map<string, string> {
  const start = doc.indexOf('\n## Plugin settings\n');
  const end = doc.indexOf('\n## ', start + 1);
  const rows = new Map<string, string>();
  for (const m of doc.slice(start, end).matchAll(/^\| `([A-Za-z]+)` \| [^|]*\| ([^|]*) \|/gm))
    rows.set(m[1] as string, (m[2] as string).trim());
  return rows;
}

describe('docs/configuration.md defaults against the code', () => {
  // What the plugin runs with when neither the block nor the environment says anything.
  const resolved = resolveSettings(validateSettings({}, {}), {}) as unknown as Record<string, unknown> & {
    announcementLimits: Record<string, unknown>;
    ownership: Record<string, unknown>;
    retainedBudget: Record<string, unknown>;
  };
  // Settings the code keeps under another name.
  const renamed: Record<string, () => unknown> = {
    announcementRetainedBytesPerUser: () => resolved.retainedBudget.perUserBytes,
    announcementRetainedBytesTotal: () => resolved.retainedBudget.totalBytes,
    firstUsePins: () => resolved.firstUse !== undefined,
  };
  const actual = (setting: string): unknown =>
    setting in LIMIT_SETTINGS
      ? resolved.announcementLimits[LIMIT_SETTINGS[setting as keyof typeof LIMIT_SETTINGS]]
      : (renamed[setting]?.() ?? resolved[setting] ?? resolved.ownership[setting]);

  it('every default written as a value is the value the code uses', () => {
    let compared = 0;
    for (const [setting, cell] of defaultsColumn()) {
      const literal = /^`([^`]+)`$/.exec(cell)?.[1];
      if (literal === undefined) continue;
      expect(String(actual(setting)), `${setting}: the doc says ${literal}`).to.equal(literal);
      compared += 1;
    }
    expect(compared, 'rows compared').to.be.above(25);
  });

  it('every default written as none or unset is no value in the code', () => {
    for (const [setting, cell] of defaultsColumn()) {
      if (!/^(none|unset)\b/.test(cell)) continue;
      const value = actual(setting);
      const empty =
        value === undefined || (typeof value === 'object' && value !== null && Object.keys(value).length === 0);
      expect(empty, `${setting}: the doc says ${cell}, the code has ${JSON.stringify(value)}`).to.equal(true);
    }
  });
});
