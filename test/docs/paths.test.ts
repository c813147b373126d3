import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

const ROOT = resolve(__dirname, '..', '..', '..');
/** The repository's own top-level entries: a backticked path starting with one of them names a file of ours. */
const TOP = [
  'plugin',
  'policies',
  'conditions',
  'sdk',
  'examples',
  'scripts',
  'config',
  'deploy',
  'docs',
  'test',
  'bench',
  '.ci',
];
const FILES = [
  'Dockerfile',
  'docker-compose.yml',
  'package.json',
  'package-lock.json',
  'tsconfig.json',
  '.dependency-cruiser.cjs',
  '.mocharc.cjs',
  '.mocharc.unit.cjs',
];

const DOCS = [
  'README.md',
  'CONTRIBUTING.md',
  'CHANGELOG.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** `code` spans that name a path of this repository (no placeholders, globs or host paths). */
function namedPaths(text: string): string[] {
  const found = new Set<string>();
  for (const [, span] of text.matchAll(/`([^`\n]+)`/g)) {
    const path = span!.replace(/#.*$/, '').replace(/:\d+$/, '');
    if (/[<>*…{}$ ]|\.\.\./.test(path)) continue;
    if (FILES.includes(path) || TOP.some((top) => path.startsWith(`${top}/`))) found.add(path);
  }
  return [...found];
}

/** Relative links of markdown, resolved from the document's folder, without their anchor. */
function linkedPaths(text: string, doc: string): string[] {
  const found = new Set<string>();
  for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
    if (/^[a-z]+:|^#/.test(target!)) continue;
    found.add(join(dirname(doc), target!.replace(/#.*$/, '')));
  }
  return [...found];
}

describe('paths named in README.md, CONTRIBUTING.md, CHANGELOG.md and docs/', () => {
  for (const doc of DOCS) {
    it(`${doc}: every repository path it names or links exists`, () => {
      const text = readFileSync(join(ROOT, doc), 'utf8');
      const missing = [...namedPaths(text), ...linkedPaths(text, doc)].filter(
        (p) => !existsSync(join(ROOT, p.replace(/\/$/, ''))),
      );
      expect(missing).to.deep.equal([]);
    });
  }

  it('finds the paths it checks (a path that is not there is reported)', () => {
    expect(namedPaths('see `deploy/grafana/` and `deploy/observability/grafana/`, not `/etc/gateway`')).to.deep.equal([
      'deploy/grafana/',
      'deploy/observability/grafana/',
    ]);
    expect(existsSync(join(ROOT, 'deploy/grafana'))).to.equal(false);
  });
});
