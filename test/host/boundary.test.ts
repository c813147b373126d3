import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const ROOT = resolve(__dirname, '..', '..', '..');
/** The folders the package's code is built from. */
const SHIPPED = ['plugin', 'policies', 'conditions', 'sdk'];
/** The host adapter: the one folder that may know Express Gateway's internals. */
const ADAPTER = 'plugin/host/';

/**
 * What only the adapter knows of Express Gateway, and the words a file that knew it would use. The import rules
 * (.dependency-cruiser.cjs) keep its modules and its context out of the core; these are what an import does not show.
 */
const HOST_KNOWLEDGE: ReadonlyArray<readonly [string, RegExp]> = [
  ['the per-request context (egContext)', /egContext/],
  ["the config reload (its Config's loadConfig)", /\bloadConfig\b/],
  ["the event bus (eventBus, 'hot-reload')", /\beventBus\b|hot-reload/],
  ["the servers' events ('http-ready', 'https-ready')", /\bhttps?-ready\b/],
  ["a server's 'request' listeners (the host's express app)", /listeners\(\s*['"]request['"]\s*\)/],
];

/** The TypeScript sources under `dir` (relative to the repository), the SDK's own build and dependencies left out. */
function sources(dir: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) {
      if (entry.name !== 'node_modules' && path !== 'sdk/dist') found.push(...sources(path));
    } else if (entry.name.endsWith('.ts')) found.push(path);
  }
  return found;
}

function knowledgeIn(file: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  return HOST_KNOWLEDGE.filter(([, words]) => words.test(text)).map(([what]) => what);
}

describe('the host behind its port: what only plugin/host/ knows', () => {
  const shipped = SHIPPED.flatMap(sources);

  it("no shipped file outside plugin/host/ names the host's context, reload, event bus or servers", () => {
    const found = shipped
      .filter((file) => !file.startsWith(ADAPTER))
      .flatMap((file) => knowledgeIn(file).map((what) => `${file}: ${what}`));
    expect(found, 'reach the host through plugin/host/port.ts instead').to.deep.equal([]);
  });

  it('each word is one the adapter uses, so the check looks for what the host is', () => {
    const adapter = shipped.filter((file) => file.startsWith(ADAPTER)).flatMap(knowledgeIn);
    expect(new Set(adapter)).to.deep.equal(new Set(HOST_KNOWLEDGE.map(([what]) => what)));
  });
});
