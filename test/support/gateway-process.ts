import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort, uniquePrefix } from './env';
import { deleteBusTopology } from './broker';
import { TEST_JWT_SECRET } from './tokens';
import { seedEmbeddedData } from './embedded-template';

export interface GatewayProcess {
  baseUrl: string;
  configDir: string;
  prefix: string;
  output(): string;
  /** The gateway process (graceful-stop tests signal it themselves). */
  child: ChildProcess;
  gatewayConfig(): string;
  stop(): Promise<void>;
}

const ROOT = resolve(__dirname, '..', '..', '..');

/**
 * Starts `node dist/scripts/start.js` (what `npm start` runs) in its own config directory, port and bus
 * prefix, and resolves once it says it is ready. Without the discovery grace unless the test sets
 * DISCOVERY_GRACE_MS (`undefined` for the default): a test of other behaviour expects 404 for a route no contract serves.
 */
export async function startGateway(
  env: Record<string, string | undefined> = {},
  opts: { configDir?: string; readyTimeoutMs?: number; port?: number } = {},
): Promise<GatewayProcess> {
  const port = opts.port ?? (await freePort());
  const configDir = opts.configDir ?? mkdtempSync(join(tmpdir(), 'contracts-gw-'));
  const prefix = env.BUS_PREFIX ?? uniquePrefix('gw');
  // The reference services' embedded database lives in the config directory unless DATA_DIR says otherwise.
  if (env.START_REFERENCE_SERVICES !== 'false' && !env.DATABASE_URL)
    await seedEmbeddedData(env.DATA_DIR ?? join(configDir, 'data'));
  let out = '';
  const child: ChildProcess = spawn(process.execPath, [join(ROOT, 'dist', 'scripts', 'start.js')], {
    cwd: ROOT,
    env: {
      ...process.env,
      LOG_LEVEL: 'warn',
      JWT_SECRET: TEST_JWT_SECRET,
      DISCOVERY_GRACE_MS: '0',
      PORT: String(port),
      ...env,
      EG_CONFIG_DIR: configDir,
      BUS_PREFIX: prefix,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const cleanUp = async () => {
    if (!opts.configDir) rmSync(configDir, { recursive: true, force: true });
    if (env.BUS_URL?.startsWith('amqp')) await deleteBusTopology(env.BUS_URL, prefix);
  };

  const readyMs = opts.readyTimeoutMs ?? 20000;
  await new Promise<void>((resolveReady, reject) => {
    const timer = setTimeout(() => reject(new Error(`gateway not ready in ${readyMs} ms:\n${out}`)), readyMs);
    const check = () => {
      if (out.includes('gateway ready')) {
        clearTimeout(timer);
        resolveReady();
      }
    };
    child.stdout!.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`gateway exited with ${code}:\n${out}`));
    });
  }).catch(async (err: unknown) => {
    // Not ready: the caller gets no handle to stop it with, so it is stopped here, before the error goes up.
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
    // The start's own error is the one to see: a cleanup that fails too (a broker cut by the test) must not hide it.
    await cleanUp().catch(() => undefined);
    throw err;
  });

  return {
    baseUrl: `http://127.0.0.1:${port}`,
    configDir,
    prefix,
    output: () => out,
    child,
    gatewayConfig: () => readFileSync(join(configDir, 'gateway.config.yml'), 'utf8'),
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        const killer = setTimeout(() => child.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(killer);
      }
      await cleanUp();
    },
  };
}

/** Polls until `check` passes (routes are rewritten asynchronously after discovery). */
export async function eventually<T>(check: () => Promise<T>, timeoutMs = 8000, intervalMs = 100): Promise<T> {
  const until = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      last = err;
      if (Date.now() > until) throw last;
      await new Promise((r) => setTimeout(r, intervalMs));
    }
  }
}
