import { expect } from 'chai';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startGateway } from '../support/gateway-process';

const ROOT = resolve(__dirname, '..', '..', '..');
const SECRET = 'cipher-s3cret-never-printed';

/** A config directory made from config/, with `edit` applied to one of its files. */
function configDirWith(name: string, edit: (text: string) => string): { dir: string; file: string } {
  const dir = mkdtempSync(join(tmpdir(), 'contracts-yaml-'));
  cpSync(join(ROOT, 'config'), dir, { recursive: true });
  const file = join(dir, name);
  writeFileSync(file, edit(readFileSync(file, 'utf8')));
  return { dir, file };
}

/** The output of a start expected to fail, and its exit code. */
async function failedStart(dir: string, env: Record<string, string> = {}): Promise<{ code: string; lines: string[] }> {
  const err = await startGateway({ LOG_LEVEL: 'info', ...env }, { configDir: dir }).then(
    (gw) => gw.stop().then(() => new Error('the gateway started')),
    (e: Error) => e,
  );
  const [head, ...rest] = err.message.split('\n');
  const code = /exited with (\d+)/.exec(head!)?.[1];
  expect(code, err.message).to.be.a('string');
  return { code: code!, lines: rest.join('\n').trim().split('\n') };
}

describe('npm start with a malformed config file', function () {
  this.timeout(60_000);
  let dir: string | undefined;
  afterEach(() => dir && rmSync(dir, { recursive: true, force: true }));

  it('names system.config.yml, its line and column, in one line, and prints nothing of the file', async () => {
    let file: string;
    ({ dir, file } = configDirWith('system.config.yml', (t) => t.replace(/cipherKey: .*/, `cipherKey: ${SECRET}: x`)));
    const lines0 = readFileSync(file, 'utf8').split('\n');
    const line = lines0.findIndex((l) => l.includes(SECRET)) + 1;
    // The value that holds the mistake starts where the secret does.
    const column = lines0[line - 1]!.indexOf(SECRET) + 1;
    const { code, lines } = await failedStart(dir);
    expect(code).to.equal('78');
    expect(lines).to.have.length(1);
    expect(lines[0]).to.equal(
      `[contracts] ${file} is not valid YAML at line ${line}, column ${column}: Nested mappings are not allowed in compact mappings. The gateway does not start.`,
    );
    expect(lines.join('\n')).to.not.include(SECRET).and.not.include('session');
  });

  it('names gateway.config.yml, its line and column, in one line', async () => {
    let file: string;
    ({ dir, file } = configDirWith('gateway.config.yml', (t) => `${t}extra: [unclosed, ${SECRET}\n`));
    const { code, lines } = await failedStart(dir);
    expect(code).to.equal('78');
    expect(lines).to.have.length(1);
    expect(lines[0]).to.match(
      new RegExp(
        `^\\[contracts\\] ${file.replace(/[.]/g, '\\.')} is not valid YAML at line \\d+, column \\d+: .+\\. The gateway does not start\\.$`,
      ),
    );
    expect(lines[0]).to.not.include(SECRET);
  });

  it('says when only the ${VAR} substitution breaks the file, and never prints the value', async () => {
    let file: string;
    ({ dir, file } = configDirWith('system.config.yml', (t) =>
      t.replace(/cipherKey: .*/, 'cipherKey: ${TEST_CIPHER_KEY}'),
    ));
    const { code, lines } = await failedStart(dir, { TEST_CIPHER_KEY: `${SECRET}: [` });
    expect(code).to.equal('78');
    expect(lines).to.have.length(1);
    expect(lines[0]).to.include(`${file} is not valid YAML at line`).and.include('(after ${VAR} substitution)');
    expect(lines[0]).to.not.include(SECRET);
  });

  it("turns what only the host's own parser refuses into one line without the file", async () => {
    // An alias to no anchor: the plugin's parser reads it, the host's (js-yaml) refuses it.
    ({ dir } = configDirWith('system.config.yml', (t) =>
      t.replace(/cipherKey: .*/, `cipherKey: ${SECRET}\n  other: *nowhere`),
    ));
    const { code, lines } = await failedStart(dir);
    expect(code).to.equal('1');
    expect(lines).to.have.length(1);
    expect(lines[0]).to.match(
      /^\[contracts\] start failed: the gateway's configuration in .* could not be loaded: not valid YAML at line \d+, column \d+: .+$/,
    );
    expect(lines[0]).to.not.include(SECRET);
  });
});

describe('npm start with a variable the config files use set but empty, or a port that is not one', function () {
  this.timeout(60_000);
  let dir: string | undefined;
  afterEach(() => dir && rmSync(dir, { recursive: true, force: true }));

  for (const [name, file] of [
    ['PORT', 'gateway.config.yml'],
    ['HOST', 'gateway.config.yml'],
    ['EG_CIPHER_KEY', 'system.config.yml'],
  ] as const) {
    it(`${name}= (empty): exit 78 with one line naming it, not the host taking the empty value`, async () => {
      ({ dir } = configDirWith(file, (t) => t));
      const { code, lines } = await failedStart(dir, { [name]: '' });
      expect(code).to.equal('78');
      expect(lines).to.deep.equal([
        `[contracts] invalid setting: ${name} is set but empty (${file} uses it, and the host would take the empty value, not its default); unset it or give it a value. The gateway does not start.`,
      ]);
    });
  }

  for (const value of ['abc', '0', '65536', '80 80']) {
    it(`PORT=${JSON.stringify(value)}: exit 78 with one line saying what a port is`, async () => {
      ({ dir } = configDirWith('gateway.config.yml', (t) => t));
      const { code, lines } = await failedStart(dir, { PORT: value });
      expect(code).to.equal('78');
      expect(lines).to.deep.equal([
        `[contracts] invalid setting: PORT is ${JSON.stringify(value)} (gateway.config.yml uses it): a port is a whole number from 1 to 65535. The gateway does not start.`,
      ]);
    });
  }
});
