import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readSpans, type SpanLine } from './spans-file';
import { startGateway, type GatewayProcess } from '../support/gateway-process';

/** A gateway process with an OpenTelemetry set-up loaded (`--require setup`), and the spans it has finished. */
export interface TracedGateway {
  gw: GatewayProcess;
  spans(): SpanLine[];
  stop(): Promise<void>;
}

/** Starts the gateway with `setup` (a file beside this one, compiled) writing its spans to a file of its own. */
export async function startTracedGateway(setup: string, env: Record<string, string>): Promise<TracedGateway> {
  const dir = mkdtempSync(join(tmpdir(), 'contracts-spans-'));
  const spansFile = join(dir, 'spans.jsonl');
  try {
    const gw = await startGateway({
      ...env,
      SPANS_FILE: spansFile,
      NODE_OPTIONS: `--require ${join(__dirname, setup)}`,
      ACCESS_LOG: 'false',
    });
    return {
      gw,
      spans: () => readSpans(spansFile),
      stop: async () => {
        await gw.stop();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}
