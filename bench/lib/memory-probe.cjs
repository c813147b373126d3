'use strict';
/**
 * Preloaded (`--require`) by bench/embedded-memory.mjs: on SIGUSR2 writes what the process holds to
 * $BENCH_MEMORY_FILE (process.memoryUsage(), the V8 heap's spaces, the RSS from /proc with its file-backed and
 * anonymous parts). Inactive without BENCH_MEMORY_FILE.
 */
const file = process.env.BENCH_MEMORY_FILE;
if (file) {
  const { readFileSync, writeFileSync } = require('node:fs');
  const v8 = require('node:v8');
  const kb = (name, status) => Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN) / 1024;
  process.on('SIGUSR2', () => {
    const status = readFileSync('/proc/self/status', 'utf8');
    const mem = process.memoryUsage();
    const spaces = Object.fromEntries(
      v8.getHeapSpaceStatistics().map((s) => [s.space_name, s.space_used_size / 2 ** 20]),
    );
    writeFileSync(
      file,
      JSON.stringify({
        rss: kb('VmRSS', status),
        rssAnon: kb('RssAnon', status),
        rssFile: kb('RssFile', status),
        heapUsed: mem.heapUsed / 2 ** 20,
        heapTotal: mem.heapTotal / 2 ** 20,
        external: mem.external / 2 ** 20,
        arrayBuffers: mem.arrayBuffers / 2 ** 20,
        spaces,
      }),
    );
  });
}
