import { spawn, type ChildProcess } from 'node:child_process';
import { join, resolve } from 'node:path';
import { eventually } from './gateway-process';

const ROOT = resolve(__dirname, '..', '..', '..');

export interface ServiceProcess {
  child: ChildProcess;
  exited: Promise<number | null>;
  output(): string;
  /** SIGTERM (the service's graceful stop), SIGKILL if it is still there after 5 s. */
  stop(): Promise<void>;
}

/** A test service script of dist/test/support as its own process; resolves once it prints `ready`. */
export function startServiceProcess(script: string, env: Record<string, string>): Promise<ServiceProcess> {
  return startScriptProcess(join('test', 'support', script), env);
}

/** A process that has not said `ready`: killed and awaited before the error goes up, since no caller can stop it. */
export async function killUnready(child: ChildProcess, exited: Promise<unknown>, err: unknown): Promise<never> {
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await exited;
  throw err;
}

/** A script of dist (`scripts/reference-services`, `test/support/ledger-service`, …) as its own process; resolves once it prints `ready`. */
export function startScriptProcess(
  script: string,
  env: Record<string, string>,
  readyTimeoutMs = 15000,
): Promise<ServiceProcess> {
  return startCommandProcess(process.execPath, [join(ROOT, 'dist', `${script}.js`)], env, readyTimeoutMs, script);
}

/** Any command as its own process (a Python service, …); resolves once it prints `ready`. */
export async function startCommandProcess(
  command: string,
  args: string[],
  env: Record<string, string>,
  readyTimeoutMs = 15000,
  script = args[0] ?? command,
): Promise<ServiceProcess> {
  let out = '';
  const child = spawn(command, args, {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  // An exit ends the wait at once; waiting out the timeout would only delay the same failure.
  const exitedEarly = exited.then(() => Promise.reject(new Error(`${script} exited:\n${out}`)));
  exitedEarly.catch(() => undefined);
  const ready = eventually(async () => {
    // Ended: exitedEarly has the answer, and polling stops.
    if (child.exitCode !== null || child.signalCode !== null) return;
    if (!out.includes('ready')) throw new Error(`${script} not ready in ${readyTimeoutMs} ms:\n${out}`);
  }, readyTimeoutMs);
  await Promise.race([ready, exitedEarly]).catch((err: unknown) => killUnready(child, exited, err));
  return {
    child,
    exited,
    output: () => out,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(killer);
    },
  };
}
