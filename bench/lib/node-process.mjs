/**
 * What every benchmark script that starts Node processes shares: where bench/ and the repository are, the heap bound
 * each process runs with, and starting and stopping one process (bench/run.mjs, bench/embedded-memory.mjs).
 */
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const BENCH = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const ROOT = resolve(BENCH, '..');
/** Loads the repository's own dependencies (autocannon, jose, amqplib), which bench/ does not install. */
export const rootRequire = createRequire(join(ROOT, 'package.json'));

/**
 * The heap the sidecar image runs the gateway with (scripts/container/start.sh): its old-space bound and young
 * generation; every process of every configuration gets the same, so memory and throughput are compared under one
 * rule. BENCH_HEAP_ARGS replaces it.
 */
export const HEAP_ARGS = (process.env.BENCH_HEAP_ARGS ?? '--max-old-space-size=128 --max-semi-space-size=16').split(
  ' ',
);

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Starts `node HEAP_ARGS nodeArgs script` with `env` over this process's environment; resolves to
 * `{ label, child, pid, output() }` once its stdout (and its stderr too with `stderrToo`) contains `ready`, or with
 * `ipc` once it sends `{ ready }`; fails when it exits first or after `timeoutMs`. `onSpawn` gets the child at once,
 * so that the caller can stop it whether or not it gets ready.
 */
export function startNode(
  label,
  script,
  {
    env = {},
    nodeArgs = [],
    ready = 'ready',
    stderrToo = false,
    ipc = false,
    cwd = ROOT,
    // BENCH_READY_TIMEOUT_MS: a loaded machine starts the services slower than the 40 s that suit a quiet one.
    timeoutMs = Number(process.env.BENCH_READY_TIMEOUT_MS ?? 40000),
    onSpawn,
    // The Node binary that runs it: this one unless a configuration runs on another (run.mjs --other-node).
    execPath = process.execPath,
  } = {},
) {
  const child = spawn(execPath, [...HEAP_ARGS, ...nodeArgs, script], {
    cwd,
    env: { ...process.env, ...env },
    stdio: ipc ? ['ignore', 'pipe', 'pipe', 'ipc'] : ['ignore', 'pipe', 'pipe'],
  });
  onSpawn?.(child);
  let out = '';
  child.stdout.on('data', (d) => (out = (out + d).slice(-20000)));
  child.stderr.on('data', (d) => (out = (out + d).slice(-20000)));
  const proc = { label, child, pid: child.pid, output: () => out };
  return new Promise((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`${label} not ready in ${timeoutMs / 1000} s:\n${out}`)), timeoutMs);
    const streams = stderrToo ? [child.stdout, child.stderr] : [child.stdout];
    const check = () => {
      if (out.includes(ready)) {
        clearTimeout(timer);
        for (const s of streams) s.off('data', check);
        ok(proc);
      }
    };
    for (const s of streams) s.on('data', check);
    if (ipc) {
      child.once('message', (m) => {
        if (!m?.ready) return;
        clearTimeout(timer);
        ok(proc);
      });
    }
    child.once('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`${label} exited with ${code}:\n${out}`));
    });
  });
}

/** SIGTERM, then SIGKILL after 5 s; resolves once the process has exited. */
export async function stopChild(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  const t = setTimeout(() => child.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(t);
}
