import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { eventually } from '../support/gateway-process';

export const ROOT = resolve(__dirname, '..', '..', '..');

/** npm as the tests run it: from the local cache when it can (the packages are the same), quietly. */
export const NPM_ENV = {
  npm_config_prefer_offline: 'true',
  npm_config_audit: 'false',
  npm_config_fund: 'false',
  npm_config_update_notifier: 'false',
};

export interface Run {
  code: number | null;
  output: string;
}

/** Runs a command to its end; resolves with its exit code and combined output (never rejects on a non-zero exit). */
export function run(
  cmd: string,
  args: string[],
  opts: { cwd?: string; env?: Record<string, string | undefined>; timeoutMs?: number } = {},
): Promise<Run> {
  return new Promise((resolveRun, reject) => {
    let output = '';
    const child = spawn(cmd, args, {
      cwd: opts.cwd ?? ROOT,
      env: { ...inherited(), ...NPM_ENV, ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${cmd} ${args.join(' ')} took longer than ${opts.timeoutMs} ms:\n${output}`));
    }, opts.timeoutMs ?? 240000);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolveRun({ code, output });
    });
  });
}

/** `npm pack` of this repository (already built by `npm test`) into `dir`; returns the tarball's path. */
export async function packTarball(dir: string): Promise<string> {
  const r = await run('npm', ['pack', '--ignore-scripts', '--pack-destination', dir], { timeoutMs: 60000 });
  if (r.code !== 0) throw new Error(`npm pack failed:\n${r.output}`);
  const file = readdirSync(dir).find((f) => f.endsWith('.tgz'));
  if (!file) throw new Error('npm pack made no tarball');
  return join(dir, file);
}

export interface Started {
  child: ChildProcess;
  output(): string;
  stop(): Promise<number | null>;
}

/** Starts a long-running command and resolves once `ready` (given its output so far) returns true, or fails with its output. */
export async function startProcess(
  cmd: string,
  args: string[],
  opts: { cwd: string; env: Record<string, string | undefined> },
  ready: (output: string) => Promise<boolean>,
): Promise<Started> {
  let out = '';
  const child = spawn(cmd, args, {
    cwd: opts.cwd,
    env: { ...inherited(), ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  await eventually(
    async () => {
      if (child.exitCode !== null) throw new Error(`exited with ${child.exitCode}:\n${out}`);
      if (!(await ready(out))) throw new Error(`not ready:\n${out}`);
    },
    30000,
    200,
  ).catch(async (err) => {
    child.kill('SIGKILL');
    await exited;
    throw err;
  });
  return {
    child,
    output: () => out,
    async stop() {
      if (child.exitCode !== null) return child.exitCode;
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 15000);
      const code = await exited;
      clearTimeout(killer);
      return code;
    },
  };
}

/** True when GET url answers at all (any status). */
export async function answers(url: string): Promise<boolean> {
  try {
    await fetch(url, { signal: AbortSignal.timeout(2000) });
    return true;
  } catch {
    return false;
  }
}

/** This process's environment less EG_CONFIG_DIR: an installed gateway and `eg` find their config by their folder. */
function inherited(): NodeJS.ProcessEnv {
  const { EG_CONFIG_DIR: _ignored, ...rest } = process.env;
  return rest;
}
