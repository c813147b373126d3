/** One series as the exposition-format parser gives it: its labels and value. */
interface Series {
  labels?: Record<string, string>;
  value?: string;
}

interface Family {
  name: string;
  type: string;
  metrics: Series[];
}

// The parser ships no type declarations; its one export takes the exposition text and returns the families.
const parsePrometheusTextFormat = require('parse-prometheus-text-format') as (text: string) => Family[];

export interface Scrape {
  /** Families as typed by their `# TYPE` lines (COUNTER, GAUGE, HISTOGRAM…). */
  types: Map<string, string>;
  /**
   * Every sample line by its own name (`…_bucket`, `…_count` of a histogram included), with its labels: the parser
   * folds a histogram's series into one and drops their labels, so the samples are read a second time untyped.
   */
  samples: Map<string, Series[]>;
}

/** Scrapes a metrics endpoint and parses the Prometheus text format with a real parser (which throws on a bad line). */
export async function scrape(url: string): Promise<Scrape> {
  const res = await fetch(url);
  if (res.status !== 200) throw new Error(`GET ${url}: ${res.status}`);
  const contentType = res.headers.get('content-type') ?? '';
  if (!contentType.startsWith('text/plain')) throw new Error(`GET ${url}: content-type ${contentType}`);
  const text = await res.text();
  const types = new Map(parsePrometheusTextFormat(text).map((f) => [f.name, f.type]));
  const untyped = parsePrometheusTextFormat(
    text
      .split('\n')
      .filter((l) => !l.startsWith('# TYPE '))
      .join('\n'),
  );
  // Untyped, each run of lines of one name is a family of its own: a histogram's names come round once per series.
  const samples = new Map<string, Series[]>();
  for (const f of untyped) samples.set(f.name, [...(samples.get(f.name) ?? []), ...f.metrics]);
  return { types, samples };
}

/** The sum of the values of the samples whose labels include `labels`; 0 when there is none. */
export function sample(scraped: Scrape, name: string, labels: Record<string, string> = {}): number {
  let total = 0;
  for (const s of scraped.samples.get(name) ?? []) {
    if (Object.entries(labels).every(([k, v]) => s.labels?.[k] === v)) total += Number(s.value ?? 0);
  }
  return total;
}

/** The distinct values of one label across a name's samples. */
export function labelValues(scraped: Scrape, name: string, label: string): Set<string> {
  return new Set(
    (scraped.samples.get(name) ?? []).map((s) => s.labels?.[label]).filter((v): v is string => v !== undefined),
  );
}

/** How many series (label sets) a name has. */
export function seriesCount(scraped: Scrape, name: string): number {
  return scraped.samples.get(name)?.length ?? 0;
}
