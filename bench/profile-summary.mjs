#!/usr/bin/env node
/**
 * Where the time goes in a V8 CPU profile (node --cpu-prof, or `npm run bench -- --profile=b`): self time by
 * function and by package/module, and inclusive time of the plugin's own functions. A text flame-graph summary;
 * open the .cpuprofile in Chrome DevTools or speedscope for the graph itself.
 *   node bench/profile-summary.mjs bench/profiles/<file>.cpuprofile [top=25]
 */
import { readFileSync } from 'node:fs';

const [file, topArg] = process.argv.slice(2);
const top = Number(topArg ?? 25);
const prof = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const self = new Map();
const dt = prof.timeDeltas;
for (let i = 0; i < prof.samples.length; i++) self.set(prof.samples[i], (self.get(prof.samples[i]) ?? 0) + (dt[i] ?? 0));
const parent = new Map();
for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const total = [...self.values()].reduce((a, b) => a + b, 0);

const where = (cf) => {
  const url = cf.url.replace(/^file:\/\//, '');
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) return url.slice(nm + 13).split('/').slice(0, url.slice(nm + 13).startsWith('@') ? 2 : 1).join('/');
  if (url.includes('/dist/')) return url.slice(url.indexOf('/dist/') + 6);
  return url.startsWith('node:') ? url : url === '' ? `(${cf.functionName || 'native'})` : 'node:internal';
};
const label = (cf) => `${cf.functionName || '(anonymous)'} ${where(cf)}:${cf.lineNumber + 1}`;

const bump = (m, k, v) => m.set(k, (m.get(k) ?? 0) + v);
const fnSelf = new Map();
const modSelf = new Map();
const ownIncl = new Map();
for (const [id, t] of self) {
  const n = byId.get(id);
  bump(fnSelf, label(n.callFrame), t);
  bump(modSelf, where(n.callFrame), t);
  // inclusive time of plugin functions (dist/plugin, dist/policies), counted once per stack
  const seen = new Set();
  for (let at = id; at !== undefined; at = parent.get(at)) {
    const cf = byId.get(at).callFrame;
    if (/\/dist\/(plugin|policies)\//.test(cf.url)) {
      const k = label(cf);
      if (!seen.has(k)) bump(ownIncl, k, t), seen.add(k);
    }
  }
}
const pct = (t) => `${((100 * t) / total).toFixed(1).padStart(5)}%`;
const show = (title, m) => {
  console.log(`\n## ${title}`);
  for (const [k, t] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${pct(t)}  ${k}`);
};
console.log(`total sampled ${(total / 1e6).toFixed(1)} s`);
show('self time by module', modSelf);
show('self time by function', fnSelf);
show('inclusive time of the plugin’s functions', ownIncl);
