import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SETTING_DECLARATIONS, type SettingDeclaration } from '../plugin/settings/declarations';

/**
 * `npm run docs:settings`: writes the "Plugin settings" table of docs/configuration.md from the settings'
 * declarations (plugin/settings/declarations.ts), so the table never says what the code does not;
 * test/docs/configuration.test.ts fails when the file and the declarations differ.
 */
export const CONFIGURATION_DOC = join(__dirname, '..', '..', 'docs', 'configuration.md');

const HEADER = '| setting | environment | default | allowed | meaning |\n|---|---|---|---|---|\n';

function row(key: string, d: SettingDeclaration): string {
  const cells = [`\`${key}\``, d.env ? `\`${d.env}\`` : '', d.doc.default, d.doc.allowed, d.doc.meaning];
  return `|${cells.map((c) => (c === '' ? ' ' : ` ${c} `)).join('|')}|\n`;
}

/** The table, header included, one row per declared setting in declaration order. */
export function settingsTable(): string {
  const rows = Object.entries(SETTING_DECLARATIONS as Record<string, SettingDeclaration>).map(([key, d]) =>
    row(key, d),
  );
  return HEADER + rows.join('');
}

/** The document with its settings table (the header up to the first blank line) replaced by `settingsTable()`. */
export function withSettingsTable(doc: string): string {
  const start = doc.indexOf(HEADER);
  if (start < 0) throw new Error('docs/configuration.md has no settings table header');
  const end = doc.indexOf('\n\n', start);
  return doc.slice(0, start) + settingsTable() + doc.slice(end + 1);
}

if (require.main === module) {
  const before = readFileSync(CONFIGURATION_DOC, 'utf8');
  const after = withSettingsTable(before);
  if (after !== before) writeFileSync(CONFIGURATION_DOC, after);
  process.stdout.write(
    after === before
      ? 'docs/configuration.md: settings table up to date\n'
      : 'docs/configuration.md: settings table rewritten\n',
  );
}
