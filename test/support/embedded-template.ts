import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../../examples/storage';

let template: Promise<string> | undefined;

/**
 * An embedded database made and migrated once per test run: a gateway's data directory starts as a copy of it,
 * so each `npm start` in the tests opens a database instead of creating one (initdb takes seconds).
 */
function embeddedTemplate(): Promise<string> {
  template ??= (async () => {
    const dir = mkdtempSync(join(tmpdir(), 'contracts-pglite-template-'));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    const db = await openDatabase({ dataDir: dir });
    await db.close();
    return dir;
  })();
  return template;
}

/** Seeds `dataDir` with the template unless it already holds an embedded database (a restart keeps its data). */
export async function seedEmbeddedData(dataDir: string): Promise<void> {
  if (existsSync(join(dataDir, 'pglite'))) return;
  const from = await embeddedTemplate();
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  cpSync(join(from, 'pglite'), join(dataDir, 'pglite'), { recursive: true });
}
