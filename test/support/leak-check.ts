import childProcess from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';

/**
 * Loaded by both mocha configs. Records where each child process was started, and after the last test kills every
 * process still running under this one (children and theirs, found in /proc) and fails the run naming them: a
 * leftover process would otherwise keep mocha waiting after its summary, or outlive the run unseen under --exit.
 */
const ROOT = resolve(__dirname, '..', '..', '..');
const origins = new Map<number, string>();

/** The first line of the calling test code (outside this file) that started the process. */
function origin(): string {
  const frames = (new Error().stack ?? '').split('\n').slice(1);
  const frame = frames.find((f) => f.includes(`${ROOT}/dist/test/`) && !f.includes('leak-check'));
  const at = frame && /\((.*):(\d+):\d+\)$|at (.*):(\d+):\d+$/.exec(frame.trim());
  return at ? `${relative(ROOT, at[1] ?? at[3]!)}:${at[2] ?? at[4]}` : 'unknown';
}

// Every way a test (or a library it drives) starts a process goes through one of these.
for (const name of ['spawn', 'execFile', 'exec', 'fork'] as const) {
  const original = childProcess[name] as (...args: unknown[]) => childProcess.ChildProcess;
  (childProcess as unknown as Record<string, unknown>)[name] = function (this: unknown, ...args: unknown[]) {
    const child = original.apply(this, args);
    if (child.pid !== undefined) {
      const pid = child.pid;
      origins.set(pid, origin());
      child.once('exit', () => origins.delete(pid));
    }
    return child;
  };
}

interface Proc {
  pid: number;
  command: string;
}

/** Every live (not zombie) process under `root`, from /proc; only the recorded children where there is no /proc. */
export function liveDescendants(root = process.pid): Proc[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc').filter((e) => /^\d+$/.test(e));
  } catch {
    return [...origins.keys()].filter(alive).map((pid) => ({ pid, command: 'child process' }));
  }
  const parentOf = new Map<number, number>();
  for (const entry of entries) {
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const [state, parent] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (state !== 'Z') parentOf.set(Number(entry), Number(parent));
    } catch {
      // it ended while we looked
    }
  }
  const found: Proc[] = [];
  for (let frontier = [root]; frontier.length > 0; ) {
    const children = [...parentOf].filter(([, parent]) => frontier.includes(parent)).map(([pid]) => pid);
    found.push(...children.map((pid) => ({ pid, command: commandOf(pid) })));
    frontier = children;
  }
  return found;
}

function commandOf(pid: number): string {
  try {
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    return argv
      .map((a) => (relative(ROOT, a).startsWith('..') ? a : relative(ROOT, a)))
      .join(' ')
      .slice(0, 160);
  } catch {
    return 'unknown';
  }
}

/** The process exists (a zombie counts: it has not been reaped yet). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * The processes still running under this one after `graceMs` (for those already on their way out), each killed
 * (SIGKILL) and described with the test line that started it.
 */
export async function killLeftOver(graceMs = 2000, root = process.pid): Promise<string[]> {
  const until = Date.now() + graceMs;
  let left = liveDescendants(root);
  while (left.length > 0 && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 100));
    left = liveDescendants(root);
  }
  for (const { pid } of left) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  return left.map(
    ({ pid, command }) => `${command} (pid ${pid}${origins.has(pid) ? `, started at ${origins.get(pid)}` : ''})`,
  );
}

export const mochaHooks = {
  async afterAll(this: Mocha.Context): Promise<void> {
    this.timeout(10_000);
    const left = await killLeftOver();
    // Open sockets and timers do not fail the run (--exit closes them), but they are named rather than hidden.
    const handles = process
      .getActiveResourcesInfo()
      .filter((r) => !['TTYWrap', 'PipeWrap', 'ProcessWrap', 'Timeout'].includes(r));
    if (handles.length > 0)
      console.warn(
        `[leak-check] handles still open after the last test (closed by mocha --exit): ${summarise(handles)}`,
      );
    if (left.length > 0) throw new Error(`processes left running after the tests, killed now: ${left.join('; ')}`);
  },
};

function summarise(names: string[]): string {
  const counts = new Map<string, number>();
  for (const n of names) counts.set(n, (counts.get(n) ?? 0) + 1);
  return [...counts].map(([n, c]) => `${c} ${n}`).join(', ');
}
