import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { run } from '../../plugin/cli/contracts-broker-definitions';

const ROOT = resolve(__dirname, '..', '..', '..');
const OPERATIONS = readFileSync(join(ROOT, 'docs', 'operations.md'), 'utf8');

/** The section of docs/operations.md under `heading`, up to the next heading of its level or above. */
function section(heading: string): string {
  const start = OPERATIONS.indexOf(`\n${heading}\n`);
  expect(start, heading).to.be.greaterThan(-1);
  const level = heading.split(' ')[0]!;
  const rest = OPERATIONS.slice(start + heading.length + 2);
  const end = rest.search(new RegExp(`\\n#{1,${level.length}} `));
  return end === -1 ? rest : rest.slice(0, end);
}

/** The fenced blocks of one language in a section, in order, without the indentation of their fence. */
function blocks(text: string, lang: string): string[] {
  return [...text.matchAll(new RegExp(`^( *)\`\`\`${lang}\\n([\\s\\S]*?)\\n\\1\`\`\``, 'gm'))].map((m) =>
    m[2]!.replace(new RegExp(`^${m[1]}`, 'gm'), ''),
  );
}

/**
 * docs/operations.md's per-service set-up, as a reader copies it: the passwords its step 1 exports are the ones
 * contracts-broker-definitions asks for with the services file of "The services file", and the broker users its
 * step 3 connects as are the users those definitions make.
 */
describe('docs/operations.md: per-service broker users as written', () => {
  let dir: string;
  before(() => (dir = mkdtempSync(join(tmpdir(), 'per-service-doc-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("step 1's passwords and step 3's users are those of the documented services file", () => {
    const servicesFile = join(dir, 'services.yml');
    writeFileSync(servicesFile, blocks(section('### The services file'), 'yaml')[0]!);
    const [step1, step3] = blocks(section('### Per-service broker users'), 'sh');
    const exported = /^export (.*)$/m.exec(step1!)![1]!.split(/\s+/);
    const env = Object.fromEntries(exported.map((v) => [v.split('=')[0]!, 'a-password']));
    expect(Object.keys(env)).to.have.length.above(0);
    expect(Object.keys(env).every((name) => name.startsWith('BROKER_PASSWORD_'))).to.equal(true);

    const defs = JSON.parse(run(['--prefix', 'contracts', '--services', servicesFile], env));
    const made: string[] = defs.users.map((u: { name: string }) => u.name);
    // Every password exported is used: none is left over for a user the file does not make.
    expect(made.map((u) => `BROKER_PASSWORD_${u.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`)).to.have.members(
      Object.keys(env),
    );
    const connecting = [...step3!.matchAll(/BUS_URL=amqp:\/\/([^:]+):/g)].map((m) => m[1]!);
    expect(connecting).to.have.members(made);
  });
});
