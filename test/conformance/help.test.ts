import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { COMMANDS } from '../../plugin/cli/commands';

const ROOT = resolve(__dirname, '..', '..', '..');
/** Every command the package installs (package.json's bin), as built: name → file under dist/. */
const BINS = Object.entries(
  (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string> }).bin,
);

function run(file: string, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((r) => {
    const child = execFile(process.execPath, [join(ROOT, file), ...args], (_err, stdout, stderr) =>
      r({ code: child.exitCode, stdout, stderr }),
    );
  });
}

/** An operator's first try of a command is `--help`: its usage on stdout and exit 0, for every command. */
describe('every command answers --help and -h with its usage and exit 0', () => {
  it('lists the installed commands (three)', () => {
    expect(BINS.map(([name]) => name).sort()).to.deep.equal([
      'contracts-broker-definitions',
      'contracts-check-config',
      'contracts-gateway',
    ]);
  });

  for (const [name, file] of BINS) {
    const subcommands = name === 'contracts-gateway' ? ['', ...Object.keys(COMMANDS)] : [''];
    for (const sub of subcommands) {
      for (const flag of ['--help', '-h']) {
        const args = sub ? [sub, flag] : [flag];
        it(`${name} ${args.join(' ')}`, async () => {
          const r = await run(file, args);
          expect(r.code, r.stderr).to.equal(0);
          expect(r.stderr).to.equal('');
          expect(r.stdout).to.match(new RegExp(`^usage:\\s*(\\n\\s*)?${name}${sub ? ` ${sub}` : ''}`));
        });
      }
    }
  }
});

/** The scripts the docs run with node (the reference services alone, npm start) answer --help the same way. */
describe('every script the docs run answers --help and -h with its usage and exit 0, before reading a setting', () => {
  for (const name of ['start', 'reference-services', 'users-service', 'auth-service']) {
    for (const flag of ['--help', '-h']) {
      it(`node dist/scripts/${name}.js ${flag}`, async () => {
        // No BUS_URL: the scripts that need one would stop with exit 1 if they went past the help.
        const r = await new Promise<{ code: number | null; stdout: string; stderr: string }>((done) => {
          const child = execFile(
            process.execPath,
            [join(ROOT, 'dist', 'scripts', `${name}.js`), flag],
            { env: { PATH: process.env.PATH } },
            (_err, stdout, stderr) => done({ code: child.exitCode, stdout, stderr }),
          );
        });
        expect(r.code, r.stderr).to.equal(0);
        expect(r.stderr).to.equal('');
        const usage = name === 'start' ? 'npm start' : `node dist/scripts/${name}.js`;
        expect(r.stdout.startsWith(`usage: ${usage}`), r.stdout).to.equal(true);
        expect(r.stdout).to.include('docs/configuration.md');
      });
    }
  }
});
