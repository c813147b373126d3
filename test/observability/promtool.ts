import { spawnSync } from 'node:child_process';

/** What `promtool check metrics` said of an exposition: its exit status and the problems it printed. */
export interface PromtoolVerdict {
  status: number;
  output: string;
}

/**
 * Runs Prometheus's own linter, `promtool check metrics`, on an exposition (Debian's `prometheus` package ships it;
 * .ci/run installs it). Undefined when promtool is not installed: the caller skips, saying so.
 */
export function promtoolCheck(text: string): PromtoolVerdict | undefined {
  const run = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8', timeout: 30_000 });
  if ((run.error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT') return undefined;
  if (run.error) throw run.error;
  return { status: run.status ?? -1, output: `${run.stdout}${run.stderr}`.trim() };
}

export const PROMTOOL_MISSING = 'promtool is not installed (Debian: apt-get install prometheus); the check is skipped';
