#!/usr/bin/env node
/**
 * Where the time (or the memory) goes in a profile written by `npm run bench -- --profile=<key>` (CPU, .cpuprofile)
 * or `--alloc-profile=<key>` (allocations, .heapprofile), or by node --cpu-prof: self cost by package/module and by
 * function, and inclusive cost of the plugin's own functions. With --requests=N (the bench logs N beside each
 * profile) every figure is per request: µs, or bytes allocated. With --against=<other profile> --against-requests=M
 * it prints the per-request difference of the two, biggest first: what one configuration spends that the other does
 * not (e.g. (b) against the floor (c)). Open a .cpuprofile in Chrome DevTools or speedscope for the flame graph.
 *   node bench/profile-summary.mjs <file> [--requests=N] [--against=<file> --against-requests=M] [--top=25]
 */
import { readFileSync } from 'node:fs';

const args = process.argv.slice(2);
const option = (name) => args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
const file = args.find((a) => !a.startsWith('--'));
if (!file) {
  console.error(
    'usage: node bench/profile-summary.mjs <file> [--requests=N] [--against=<file> --against-requests=M] [--top=25]',
  );
  process.exit(2);
}
const top = Number(option('top') ?? 25);

const where = (cf) => {
  const url = cf.url.replace(/^file:\/\//, '');
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0)
    return url
      .slice(nm + 13)
      .split('/')
      .slice(0, url.slice(nm + 13).startsWith('@') ? 2 : 1)
      .join('/');
  if (url.includes('/dist/')) return url.slice(url.indexOf('/dist/') + 6);
  return url.startsWith('node:') ? url : url === '' ? `(${cf.functionName || 'native'})` : 'node:internal';
};
const label = (cf) => `${cf.functionName || '(anonymous)'} ${where(cf)}:${cf.lineNumber + 1}`;
const ours = (cf) => /\/dist\/(plugin|policies|sdk)\//.test(cf.url);
const bump = (m, k, v) => m.set(k, (m.get(k) ?? 0) + v);

/** Self cost per node id and each node's parent, for a CPU profile (µs) or a sampling heap profile (bytes). */
function load(path) {
  const prof = JSON.parse(readFileSync(path, 'utf8'));
  const byId = new Map();
  const parent = new Map();
  const self = new Map();
  if (prof.head) {
    // Sampling heap profile: a tree whose nodes carry selfSize.
    let next = 0;
    const walk = (n, up) => {
      const id = next++;
      byId.set(id, n);
      if (up !== undefined) parent.set(id, up);
      if (n.selfSize) self.set(id, n.selfSize);
      for (const c of n.children ?? []) walk(c, id);
    };
    walk(prof.head, undefined);
    return { kind: 'alloc', byId, parent, self };
  }
  for (const n of prof.nodes) byId.set(n.id, n);
  for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  for (let i = 0; i < prof.samples.length; i++) bump(self, prof.samples[i], prof.timeDeltas[i] ?? 0);
  return { kind: 'cpu', byId, parent, self };
}

/** Self cost by module and by function, inclusive cost of our own functions (counted once per stack). */
function summarise({ byId, parent, self }) {
  const modSelf = new Map();
  const fnSelf = new Map();
  const ownIncl = new Map();
  let total = 0;
  for (const [id, t] of self) {
    total += t;
    const cf = byId.get(id).callFrame;
    bump(modSelf, where(cf), t);
    bump(fnSelf, label(cf), t);
    const seen = new Set();
    for (let at = id; at !== undefined; at = parent.get(at)) {
      const up = byId.get(at).callFrame;
      if (!ours(up)) continue;
      const k = label(up);
      if (!seen.has(k)) {
        bump(ownIncl, k, t);
        seen.add(k);
      }
    }
  }
  return { total, modSelf, fnSelf, ownIncl };
}

const main = load(file);
const mainRequests = Number(option('requests') ?? NaN);
const against = option('against');
const unit = main.kind === 'cpu' ? 'µs' : 'bytes';
// Per request when the request count is known, else shares of the whole.
const scale = (t, requests, total) => (Number.isFinite(requests) ? t / requests : (100 * t) / total);
const fmt = (v) =>
  Number.isFinite(mainRequests) ? v.toFixed(main.kind === 'cpu' ? 1 : 0).padStart(8) : `${v.toFixed(1).padStart(5)}%`;

const a = summarise(main);
if (!against) {
  console.log(
    `total ${main.kind === 'cpu' ? `sampled ${(a.total / 1e6).toFixed(1)} s` : `allocated ${(a.total / 1e6).toFixed(1)} MB`}` +
      (Number.isFinite(mainRequests)
        ? `, ${(a.total / mainRequests).toFixed(main.kind === 'cpu' ? 1 : 0)} ${unit} per request over ${mainRequests} requests`
        : ''),
  );
  const show = (title, m) => {
    console.log(`\n## ${title}${Number.isFinite(mainRequests) ? ` (${unit} per request)` : ''}`);
    for (const [k, t] of [...m].sort((x, y) => y[1] - x[1]).slice(0, top))
      console.log(`${fmt(scale(t, mainRequests, a.total))}  ${k}`);
  };
  show('self by module', a.modSelf);
  show('self by function', a.fnSelf);
  show('inclusive, the plugin’s own functions', a.ownIncl);
} else {
  const againstRequests = Number(option('against-requests') ?? NaN);
  if (!Number.isFinite(mainRequests) || !Number.isFinite(againstRequests)) {
    console.error('--against needs --requests and --against-requests (the bench logs them beside each profile)');
    process.exit(2);
  }
  const b = summarise(load(against));
  console.log(
    `per request, ${unit}: ${file} ${(a.total / mainRequests).toFixed(1)} against ${against} ${(b.total / againstRequests).toFixed(1)}`,
  );
  const diff = (title, ma, mb) => {
    console.log(`\n## ${title}: difference, this, other (${unit} per request)`);
    const keys = new Set([...ma.keys(), ...mb.keys()]);
    const rows = [...keys].map((k) => [k, (ma.get(k) ?? 0) / mainRequests, (mb.get(k) ?? 0) / againstRequests]);
    rows.sort((x, y) => Math.abs(y[1] - y[2]) - Math.abs(x[1] - x[2]));
    for (const [k, x, y] of rows.slice(0, top))
      console.log(`${(x - y).toFixed(1).padStart(8)} ${x.toFixed(1).padStart(8)} ${y.toFixed(1).padStart(8)}  ${k}`);
  };
  diff('self by module', a.modSelf, b.modSelf);
  diff('self by function', a.fnSelf, b.fnSelf);
}
