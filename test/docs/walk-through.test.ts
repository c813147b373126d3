import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';

/**
 * docs/walk-through.md is what a newcomer pastes; scripts/ci/walkthrough.mjs is what CI runs against the containers.
 * Every request of the page must be a step of the script, and every status and code the page promises must be one
 * the script asserts, so the page cannot drift from what is checked.
 */
const ROOT = join(__dirname, '..', '..', '..');
const page = readFileSync(join(ROOT, 'docs', 'walk-through.md'), 'utf8');
const script = readFileSync(join(ROOT, 'scripts', 'ci', 'walkthrough.mjs'), 'utf8');

/** The shell block of the page's "Walk-through" section, continuation lines joined. */
function walkThroughBlock(): string {
  const section = page.slice(page.indexOf('\n## Walk-through\n'));
  const block = /^```sh\n([\s\S]*?)^```$/m.exec(section);
  if (!block) throw new Error('no ```sh block under "## Walk-through"');
  return (block[1] as string).replace(/\\\n/g, ' ');
}

/** A path with its variable parts (`$USER`, `${user}`) as `:v`, without the query string. */
function normalise(path: string): string {
  return path.replace(/\$\{[^}]+\}|\$[A-Za-z_]+/g, ':v').replace(/\?.*$/, '');
}

/** `METHOD /path` of every curl line of the page (GET when no -X is given). */
function pageRequests(block: string): string[] {
  const found = new Set<string>();
  for (const line of block.split('\n')) {
    const url = /\$GW(\/[^\s"']*)/.exec(line);
    if (!/\bcurl\b/.test(line) || !url) continue;
    const method = /-X\s+([A-Z]+)/.exec(line)?.[1] ?? 'GET';
    found.add(`${method} ${normalise(url[1] as string)}`);
  }
  return [...found];
}

/** `METHOD /path` of every request the script makes (its step() and call() lines). */
function scriptRequests(source: string): string[] {
  const found = new Set<string>();
  for (const m of source.matchAll(/'(GET|POST|PUT|PATCH|DELETE)',\s*[`']([^`']+)[`']/g)) {
    found.add(`${m[1]} ${normalise(m[2] as string)}`);
  }
  return [...found];
}

/** `status code` pairs the page's comments promise, e.g. `401 NO_AUTH_HEADER`. */
function pagePromises(block: string): string[] {
  return [...block.matchAll(/#.*?\b([1-5]\d\d) ([A-Z][A-Z_]+)\b/g)].map((m) => `${m[1]} ${m[2]}`);
}

describe('docs/walk-through.md against scripts/ci/walkthrough.mjs', () => {
  const block = walkThroughBlock();

  it('every request of the page is a request of the script', () => {
    const requests = pageRequests(block);
    expect(requests.length, 'requests found on the page').to.be.above(8);
    const checked = scriptRequests(script);
    expect(
      requests.filter((r) => !checked.includes(r)),
      'on the page, not in the script',
    ).to.deep.equal([]);
  });

  it('every status and error code the page promises is asserted by the script', () => {
    const promises = pagePromises(block);
    expect(promises.length, 'promises found on the page').to.be.above(3);
    for (const promise of promises) {
      const [status, code] = promise.split(' ');
      expect(script, promise).to.contain(`status: ${status}, code: '${code}'`);
    }
  });

  it('tells a request the script does not make apart from one it makes', () => {
    expect(pageRequests('curl -s -X PATCH $GW/api/users/$USER -H "$AUTH"')).to.deep.equal(['PATCH /api/users/:v']);
    expect(scriptRequests(script)).to.include('DELETE /api/users/:v').and.not.include('PATCH /api/users/:v');
  });
});
