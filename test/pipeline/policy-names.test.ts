import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseSync } from '@swc/core';
import {
  CONDITION_NAMES,
  GENERATED_POLICIES,
  HOST_CORS,
  PLUGIN_POLICIES,
  POLICY_NAMES,
} from '../../plugin/policy-names';
import plugin = require('../../plugin/manifest');
import { contractPipeline, edgeSteps, tablePipeline } from '../../plugin/pipeline/generated-pipeline';
import { notFoundPolicies } from '../../plugin/config-writer/not-found-endpoint';

const ROOT = resolve(__dirname, '..', '..', '..');
const REGISTRY = 'plugin/policy-names.ts';

const PLUGIN_NAMES: readonly string[] = [...Object.values(POLICY_NAMES), ...Object.values(CONDITION_NAMES)];
/** Names that are also ordinary words: only a string that is exactly the name counts. */
const WORDS: readonly string[] = [POLICY_NAMES.permission, HOST_CORS];

/** Every .ts file under the folders the registry covers. */
function sources(): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) out.push(path);
    }
  };
  for (const dir of ['plugin', 'policies', 'conditions']) walk(dir);
  return out;
}

const ALL = [...new Set([...PLUGIN_NAMES, ...WORDS])];
/** A hyphenated name (letters and hyphens only, nothing to escape) standing on its own inside a longer text (`step jwt-dev-auth: …`, a schema `$id`). */
const INSIDE = PLUGIN_NAMES.filter((n) => !WORDS.includes(n)).map(
  (n) => [n, new RegExp(`(?<![A-Za-z0-9-])${n}(?![A-Za-z0-9-])`)] as const,
);

function namesIn(text: string, whole: boolean): string[] {
  const found = ALL.filter((n) => text === n);
  if (found.length > 0 || whole) return found;
  return INSIDE.filter(([, re]) => re.test(text)).map(([n]) => n);
}

/**
 * The policy and condition names written as strings in TypeScript source: string literals (object keys and literal
 * types included) and the text of template literals. Module specifiers (`from './route-table'`) and comments are
 * not names.
 */
function nameLiterals(source: string): string[] {
  const found: string[] = [];
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) {
      for (const item of node) visit(item);
      return;
    }
    if (typeof node !== 'object' || node === null) return;
    const n = node as Record<string, unknown> & { type?: string };
    if (n.type === 'StringLiteral' && typeof n.value === 'string') found.push(...namesIn(n.value, false));
    if (n.type === 'TemplateLiteral' && Array.isArray(n.quasis)) {
      const quasis = n.quasis as Array<{ cooked?: string | null; raw: string }>;
      for (const q of quasis) found.push(...namesIn(q.cooked ?? q.raw, false));
    }
    for (const [key, value] of Object.entries(n)) {
      if (key === 'span') continue;
      const specifier =
        key === 'source' &&
        (n.type === 'ImportDeclaration' || n.type === 'ExportNamedDeclaration' || n.type === 'ExportAllDeclaration');
      if (!specifier) visit(value);
    }
  };
  visit(parseSync(source, { syntax: 'typescript', comments: false }).body);
  return found;
}

describe('policy names: one registry (plugin/policy-names.ts)', () => {
  it('finds a name written as a string, in a key, a literal type or a message, and not in imports or comments', () => {
    expect(nameLiterals("const a = 'contract-router';")).to.deep.equal(['contract-router']);
    expect(nameLiterals("const a = { 'jwt-dev-auth': [] };")).to.deep.equal(['jwt-dev-auth']);
    expect(nameLiterals("type T = 'permission' | 'x';")).to.deep.equal(['permission']);
    expect(nameLiterals('const m = `step ${p} schema-validation: ${e}`;')).to.deep.equal(['schema-validation']);
    expect(nameLiterals("const id = 'http://express-gateway.io/schemas/policies/not-found.json';")).to.deep.equal([
      'not-found',
    ]);
    expect(nameLiterals("const c = { cors: 1 }; const d = 'cors';")).to.deep.equal(['cors']);
    expect(
      nameLiterals(
        "import { a } from './route-table';\nexport * from '../conditions/contract-available';\n// 'request-trace'\nconst t = 'missing permission';",
      ),
    ).to.deep.equal([]);
  });

  it('no name is written outside the registry in plugin/, policies/ or conditions/', () => {
    const files = sources();
    expect(files).to.include(REGISTRY);
    const written = files
      .filter((f) => f !== REGISTRY)
      .flatMap((f) => nameLiterals(readFileSync(join(ROOT, f), 'utf8')).map((name) => `${f}: '${name}'`));
    expect(written).to.deep.equal([]);
    // The registry itself is where they are.
    expect(nameLiterals(readFileSync(join(ROOT, REGISTRY), 'utf8'))).to.include.members([...PLUGIN_NAMES, HOST_CORS]);
  });

  it('the manifest registers, and the generated pipelines use, the registry names', () => {
    expect(plugin.policies).to.deep.equal([...PLUGIN_POLICIES]);
    expect(new Set(PLUGIN_POLICIES)).to.deep.equal(new Set(Object.values(POLICY_NAMES)));
    const stepNames = (steps: Array<Record<string, unknown>>) => steps.map((s) => Object.keys(s)[0]);
    expect(stepNames(contractPipeline())).to.deep.equal([...GENERATED_POLICIES]);
    expect(stepNames(tablePipeline())).to.deep.equal([POLICY_NAMES.routeTable, ...GENERATED_POLICIES]);
    expect(stepNames(edgeSteps())).to.deep.equal([POLICY_NAMES.requestTrace, HOST_CORS]);
    expect(stepNames(notFoundPolicies())).to.deep.equal([POLICY_NAMES.notFound]);
  });
});
