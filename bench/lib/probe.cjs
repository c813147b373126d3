'use strict';
/**
 * Preloaded (`--require`) into every Node process the benchmark starts; inactive without BENCH_PROBE_DIR. On SIGUSR2,
 * which the benchmark sends at the start and at the end of each measured run, it:
 * - writes the time the process has spent in garbage collection so far, by kind, to $BENCH_PROBE_DIR/<pid>.json,
 *   so the report can give GC µs per request beside CPU µs per request;
 * - with BENCH_PROFILE=cpu or alloc (the process named by --profile / --alloc-profile), starts a CPU profile or a
 *   sampling allocation profile (objects the GC already freed included, which --heap-prof leaves out) at the start
 *   of the run and writes it at its end: <pid>-<n>.cpuprofile / .heapprofile. Start-up and warm-up stay out of it,
 *   unlike node --cpu-prof, whose profile of a whole process is mostly start-up for a short run.
 */
const dir = process.env.BENCH_PROBE_DIR;
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

  const mode = process.env.BENCH_PROFILE;
  const profileDir = process.env.BENCH_PROFILE_DIR;
  let toggle = () => undefined;
  if ((mode === 'cpu' || mode === 'alloc') && profileDir) {
    const { Session } = require('node:inspector');
    const session = new Session();
    session.connect();
    let running = false;
    let n = 0;
    const [start, stop, ext] =
      mode === 'cpu'
        ? ['Profiler.start', 'Profiler.stop', 'cpuprofile']
        : ['HeapProfiler.startSampling', 'HeapProfiler.stopSampling', 'heapprofile'];
    if (mode === 'cpu') session.post('Profiler.enable');
    toggle = () => {
      if (!running) {
        running = true;
        const params =
          mode === 'alloc'
            ? { samplingInterval: 8192, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true }
            : {};
        session.post(start, params);
        return;
      }
      running = false;
      n += 1;
      const out = join(profileDir, `${process.pid}-${n}.${ext}`);
      session.post(stop, (err, result) => {
        if (!err) writeFileSync(out, JSON.stringify(result.profile));
      });
    };
  }

  // Not a timer: writing a file every few hundred milliseconds showed up in the profiles it was meant to explain.
  process.on('SIGUSR2', () => {
    write();
    toggle();
  });
  write();
}
