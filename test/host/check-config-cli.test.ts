import { expect } from 'chai';
import { cpSync, mkdtempSync, rmSync, writeFileSync, appendFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { run } from '../packaging/support';

const ROOT = resolve(__dirname, '..', '..', '..');
const CLI = join(ROOT, 'dist', 'plugin', 'cli', 'contracts-check-config.js');

/** contracts-check-config: what the image's start script runs before the host reads its files. */
describe('contracts-check-config', function () {
  this.timeout(20_000);
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'contracts-check-'));
    cpSync(join(ROOT, 'config'), dir, { recursive: true });
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('says nothing and exits 0 when both files parse', async () => {
    const r = await run(process.execPath, [CLI, dir]);
    expect(r).to.deep.equal({ code: 0, output: '' });
  });

  it("names the file, line and column in one line, exit 78, without the file's text", async () => {
    appendFileSync(join(dir, 'system.config.yml'), '  secret: [hunter2-s3cret\n');
    const r = await run(process.execPath, [CLI], { env: { EG_CONFIG_DIR: dir } });
    expect(r.code).to.equal(78);
    expect(r.output).to.match(
      new RegExp(
        `^\\[contracts\\] ${join(dir, 'system.config.yml').replace(/[.]/g, '\\.')} is not valid YAML at line \\d+, column \\d+: [^\\n]+\\. The gateway does not start\\.\\n$`,
      ),
    );
    expect(r.output).to.not.include('hunter2');
  });

  it("reads the host's ${VAR} substitution as the host does", async () => {
    // Broken as written, repaired by the substitution: the host reads it, so it passes.
    writeFileSync(join(dir, 'gateway.config.yml'), 'http:\n  port: ${TEST_PORT:-8080}\nlist: [ ${TEST_ITEM} ]\n');
    expect((await run(process.execPath, [CLI, dir], { env: { TEST_ITEM: 'a' } })).code).to.equal(0);
    // Fine as written, broken by the value: refused, the value not printed.
    writeFileSync(join(dir, 'gateway.config.yml'), 'http:\n  port: ${TEST_PORT:-8080}\nitem: ${TEST_ITEM}\n');
    const broken = await run(process.execPath, [CLI, dir], { env: { TEST_ITEM: '{ s3cret' } });
    expect(broken.code).to.equal(78);
    expect(broken.output)
      .to.match(/gateway\.config\.yml is not valid YAML at line \d+, column \d+: /)
      .and.include('(after ${VAR} substitution)')
      .and.not.include('s3cret');
  });
});
