/**
 * Counters and histograms for the request path, read by prom-client's registry at scrape time. prom-client's own
 * metrics validate and hash their labels on every inc()/observe(), children included; here a series
 * is looked up once per label set by a joined key and counting is adding to numbers. The label values must already
 * be bounded (route templates, codes, services): a series is never forgotten.
 */

interface Value {
  value: number;
  labels: Record<string, string | number>;
  metricName?: string;
}

/** What prom-client's Registry reads from a metric (registerMetric, metrics(), getMetricsAsJSON()). */
export interface Collected {
  name: string;
  help: string;
  type: 'counter' | 'histogram';
  aggregator: 'sum';
  values: Value[];
}

interface Options {
  name: string;
  help: string;
  labelNames: readonly string[];
}

abstract class Family<S> {
  readonly name: string;
  readonly help: string;
  readonly aggregator = 'sum';
  private readonly labelNames: readonly string[];
  protected readonly entries = new Map<string, { labels: Record<string, string>; series: S }>();

  constructor(opts: Options) {
    this.name = opts.name;
    this.help = opts.help;
    this.labelNames = opts.labelNames;
  }

  protected abstract make(): S;

  /** The series of these label values (in labelNames order), made on first use. */
  child(...values: string[]): S {
    const key = values.length === 1 ? values[0]! : values.join('\u0000');
    let entry = this.entries.get(key);
    if (entry === undefined) {
      const labels: Record<string, string> = {};
      this.labelNames.forEach((name, i) => {
        labels[name] = values[i] ?? '';
      });
      entry = { labels, series: this.make() };
      this.entries.set(key, entry);
    }
    return entry.series;
  }

  reset(): void {
    this.entries.clear();
  }

  protected abstract collect(): Collected;

  /** What the registry reads at scrape time. */
  get(): Promise<Collected> {
    return Promise.resolve(this.collect());
  }
}

export class CounterSeries {
  value = 0;
  inc(by = 1): void {
    this.value += by;
  }
}

export class FastCounter extends Family<CounterSeries> {
  readonly type = 'counter';
  protected make(): CounterSeries {
    return new CounterSeries();
  }

  protected collect(): Collected {
    const values = [...this.entries.values()].map(({ labels, series }) => ({ labels, value: series.value }));
    return { name: this.name, help: this.help, type: 'counter', aggregator: 'sum', values };
  }
}

export class HistogramSeries {
  /** counts[i]: observations ≤ bounds[i] and > bounds[i-1]; the last slot is above every bound. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;
  constructor(private readonly bounds: readonly number[]) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    this.counts[i]! += 1;
    this.sum += value;
    this.count += 1;
  }
}

export class FastHistogram extends Family<HistogramSeries> {
  readonly type = 'histogram';
  private readonly bounds: readonly number[];
  constructor(opts: Options & { buckets: readonly number[] }) {
    super(opts);
    this.bounds = [...opts.buckets].sort((a, b) => a - b);
  }

  protected make(): HistogramSeries {
    return new HistogramSeries(this.bounds);
  }

  protected collect(): Collected {
    const values: Value[] = [];
    for (const { labels, series } of this.entries.values()) {
      let cumulative = 0;
      this.bounds.forEach((le, i) => {
        cumulative += series.counts[i]!;
        values.push({ metricName: `${this.name}_bucket`, labels: { ...labels, le }, value: cumulative });
      });
      values.push({ metricName: `${this.name}_bucket`, labels: { ...labels, le: '+Inf' }, value: series.count });
      values.push({ metricName: `${this.name}_sum`, labels, value: series.sum });
      values.push({ metricName: `${this.name}_count`, labels, value: series.count });
    }
    return { name: this.name, help: this.help, type: 'histogram', aggregator: 'sum', values };
  }
}
