import * as amqp from 'amqplib';
import { performance } from 'node:perf_hooks';

export interface FloodOptions {
  url: string;
  prefix: string;
  /** Announcements per second. */
  rate: number;
  durationMs: number;
  /** Services the flood announces as (each with several instances); every announcement changes its contracts. */
  services?: number;
}

export interface FloodResult {
  sent: number;
  /** The message type the very last announcement added: served once the gateway caught up. */
  lastMessageType: string;
  lastService: string;
  endedAt: number;
}

/**
 * Publishes `rate` changing announcements per second for `durationMs` with amqplib alone (no confirms: as fast as
 * a publisher can), paced in 10 ms slices. Each one changes its instance's contracts, so none is a mere renewal.
 */
export async function floodAnnouncements(opts: FloodOptions): Promise<FloodResult> {
  const conn = await amqp.connect(opts.url, { noDelay: true });
  const ch = await conn.createChannel();
  const exchange = `${opts.prefix}.discovery`;
  const services = opts.services ?? 10;
  let sent = 0;
  let last = { service: '', messageType: '' };
  const start = performance.now();
  try {
    while (performance.now() - start < opts.durationMs) {
      const due = Math.floor(((performance.now() - start) * opts.rate) / 1000);
      while (sent < due) {
        const service = `flood${sent % services}-service`;
        const messageType = `Flood${sent}Command`;
        const contracts = [messageType, `FloodKeep${sent % services}Query`].map((m) => ({
          messageType: m,
          targetService: service,
          inputSchema: { type: 'object', properties: { n: { type: 'integer' } } },
          outputSchema: { type: 'object' },
          requiredPermissions: [`flood:${sent}`],
        }));
        const body = { service, instanceId: `${service}-${sent % 3}`, ttlMs: 60_000, contracts };
        if (
          !ch.publish(exchange, `announce.${service}`, Buffer.from(JSON.stringify(body)), {
            contentType: 'application/json',
          })
        ) {
          await new Promise((r) => ch.once('drain', r));
        }
        last = { service, messageType };
        sent += 1;
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    return { sent, lastMessageType: last.messageType, lastService: last.service, endedAt: Date.now() };
  } finally {
    await ch.close().catch(() => undefined);
    await conn.close().catch(() => undefined);
  }
}

export interface ProbeStats {
  count: number;
  failures: number;
  medianMs: number;
  p99Ms: number;
  maxMs: number;
}

/** Sends `request` one after another (every `gapMs`) until stopped; collects latencies and non-200 answers. */
export function probeLoop(request: () => Promise<number>, gapMs = 20): { stop(): Promise<ProbeStats> } {
  const latencies: number[] = [];
  let failures = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      const t0 = performance.now();
      let status = 0;
      try {
        status = await request();
      } catch {
        status = 0;
      }
      latencies.push(performance.now() - t0);
      if (status !== 200) failures += 1;
      await new Promise((r) => setTimeout(r, gapMs));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      const sorted = [...latencies].sort((a, b) => a - b);
      const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
      return {
        count: sorted.length,
        failures,
        medianMs: at(0.5),
        p99Ms: at(0.99),
        maxMs: sorted[sorted.length - 1] ?? 0,
      };
    },
  };
}
