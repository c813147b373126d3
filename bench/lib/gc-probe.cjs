'use strict';
/**
 * Preloaded (`--require`) into every Node process the benchmark starts: keeps the time the process has spent in
 * garbage collection, by kind, and writes the running totals to $BENCH_GC_DIR/<pid>.json when sent SIGUSR2 (at the
 * start and end of each measured run), so the benchmark can report GC µs per request beside CPU µs per request (GC
 * is a large part of the gateway's distance to the floor). Inactive without BENCH_GC_DIR.
 */
const dir = process.env.BENCH_GC_DIR;
if (dir) {
  const { writeFileSync } = require('node:fs');
  const { join } = require('node:path');
  const { PerformanceObserver, constants } = require('node:perf_hooks');
  const KINDS = {
    [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
    [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
    [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
    [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
  };
  const totals = { minor: 0, major: 0, incremental: 0, weakcb: 0, count: 0, seq: 0 };
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = KINDS[e.detail?.kind] ?? 'major';
      totals[kind] += e.duration;
      totals.count += 1;
    }
  }).observe({ entryTypes: ['gc'] });
  const file = join(dir, `${process.pid}.json`);
  const write = () => {
    totals.seq += 1;
    try {
      writeFileSync(file, JSON.stringify(totals));
    } catch {
      // the benchmark's directory is gone: it has finished
    }
  };
  // Not a timer: writing a file every few hundred milliseconds showed up in the profiles it was meant to explain.
  process.on('SIGUSR2', write);
  write();
}
