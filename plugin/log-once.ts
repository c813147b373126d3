import { LRUCache } from 'lru-cache';
import type { Logger } from './logger';

/**
 * Logs a warning once per key per window, then counts the repeats it holds back and says how many with the key's
 * next line. Keys come from what arrives off the bus, so they are bounded (least recently used dropped first): a
 * flood of distinct bad messages costs at most one line each, and never unbounded memory.
 */
export class OnceLog {
  private readonly seen: LRUCache<string, { until: number; suppressed: number }>;
  private readonly windowMs: number;
  private readonly now: () => number;

  constructor(
    private readonly logger: Pick<Logger, 'warn'> | undefined,
    opts: { windowMs?: number; maxKeys?: number; now?: () => number } = {},
  ) {
    this.seen = new LRUCache({ max: opts.maxKeys ?? 1000 });
    this.windowMs = opts.windowMs ?? 60_000;
    this.now = opts.now ?? Date.now;
  }

  warn(key: string, message: string): void {
    const now = this.now();
    const entry = this.seen.get(key);
    if (entry && entry.until > now) {
      entry.suppressed += 1;
      return;
    }
    const repeats = entry && entry.suppressed > 0 ? ` (${entry.suppressed} more like it since the last line)` : '';
    this.seen.set(key, { until: now + this.windowMs, suppressed: 0 });
    this.logger?.warn(`${message}${repeats}`);
  }
}

/** Text from the wire made safe for one log line: no control characters, bounded length; a non-string by its type. */
export function inert(value: unknown, max = 120): string {
  const text = typeof value === 'string' ? value : `(${value === null ? 'null' : typeof value})`;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it takes out
  const clean = text.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');
  return clean.length > max ? `${clean.slice(0, max)}…` : clean;
}
