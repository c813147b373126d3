import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../support/env';

/** One scrape target as Prometheus's `/api/v1/targets` reports it. */
interface TargetHealth {
  health: string;
  lastError: string;
}

export interface PrometheusServer {
  /** Waits for the target's first finished scrape and returns how it went. */
  firstScrape(timeoutMs?: number): Promise<TargetHealth>;
  /** The series of an instant PromQL query: their labels and values. */
  query(promql: string): Promise<Array<{ metric: Record<string, string>; value: [number, string] }>>;
  stop(): Promise<void>;
}

/** Whether Prometheus's server is installed (Debian's `prometheus` package, beside promtool). */
export function prometheusInstalled(): boolean {
  const run = spawnSync('prometheus', ['--version'], { encoding: 'utf8', timeout: 30_000 });
  return run.error === undefined && run.status === 0;
}

/**
 * Starts a Prometheus server that scrapes `target` (host:port, /metrics) every second with its default Accept header
 * (OpenMetrics first) as the job the dashboard reads, `contracts-gateway` (deploy/observability/prometheus.yml), its
 * storage in a directory of its own that stop() removes.
 */
export async function startPrometheus(target: string): Promise<PrometheusServer> {
  const dir = mkdtempSync(join(tmpdir(), 'contracts-prometheus-'));
  writeFileSync(
    join(dir, 'prometheus.yml'),
    `global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: contracts-gateway\n    static_configs:\n      - targets: ['${target}']\n`,
  );
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  let out = '';
  const child: ChildProcess = spawn(
    'prometheus',
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  const api = async <T>(path: string): Promise<T> => {
    const res = await fetch(`${base}${path}`);
    return ((await res.json()) as { data: T }).data;
  };
  const until = async <T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = await probe().catch(() => undefined);
      if (found !== undefined) return found;
      if (child.exitCode !== null) throw new Error(`prometheus exited: ${out.slice(-2000)}`);
      if (Date.now() > deadline) throw new Error(`prometheus: no ${what} in ${timeoutMs} ms: ${out.slice(-2000)}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  };
  try {
    await until('readiness', 30_000, async () => ((await fetch(`${base}/-/ready`)).ok ? true : undefined));
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    firstScrape: (timeoutMs = 30_000) =>
      until('finished scrape', timeoutMs, async () => {
        type Targets = { activeTargets: Array<TargetHealth & { lastScrape: string }> };
        const found = (await api<Targets>('/api/v1/targets')).activeTargets[0];
        return found && found.health !== 'unknown' ? { health: found.health, lastError: found.lastError } : undefined;
      }),
    query: async (promql) =>
      (
        await api<{ result: Array<{ metric: Record<string, string>; value: [number, string] }> }>(
          `/api/v1/query?query=${encodeURIComponent(promql)}`,
        )
      ).result,
    stop,
  };
}
