import { expect } from 'chai';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { RouteLabels } from '../../plugin/observability/route-label';
import { GatewayMetrics } from '../../plugin/observability/metrics';
import { METRICS_NAMINGS, type MetricsNaming } from '../../plugin/settings/defaults';

const ROOT = join(__dirname, '..', '..', '..');
const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');

interface Panel {
  type: string;
  title: string;
  datasource?: { uid: string };
  targets?: Array<{ expr: string; datasource?: { uid: string } }>;
}

const dashboard = JSON.parse(read('deploy/observability/grafana/dashboards/contracts-gateway.json')) as {
  uid: string;
  panels: Panel[];
};
const panels = dashboard.panels.filter((p) => p.type !== 'row');
const exprs = panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));

/** The series names a PromQL expression reads (words followed by `{`, `[` or used bare as a metric). */
function metricNames(expr: string): string[] {
  return [...expr.matchAll(/\b((?:contracts_gateway|process|nodejs|http_server)_[a-z_0-9]+)\b/g)].map((m) => m[1]!);
}

describe('the Grafana dashboard and the compose observability profile', () => {
  it('reads only series the gateway exports, under either METRICS_NAMING', async () => {
    const exportedUnder = async (naming: MetricsNaming): Promise<Set<string>> => {
      const metrics = new GatewayMetrics(
        { contracts: () => 0, services: () => 0, instances: () => 0 },
        new RouteLabels(),
        () => undefined,
        naming,
      );
      metrics.httpAnswered('/x', 'GET', 200, 0.01);
      metrics.busRoundTrip('s', 'reply', 0.01);
      const exported = new Set(
        (await metrics.registry.metrics())
          .split('\n')
          .filter((l) => l && !l.startsWith('#'))
          .map((l) => l.split(/[{ ]/)[0]!),
      );
      // Families whose series appear once something is counted (labelled counters).
      for (const m of await metrics.registry.getMetricsAsJSON()) exported.add(m.name);
      return exported;
    };
    const byNaming = await Promise.all(METRICS_NAMINGS.map(exportedUnder));
    const used = new Set(exprs.flatMap(metricNames));
    expect(used.size).to.be.greaterThan(10);
    for (const name of used) {
      expect(
        byNaming.some((exported) => exported.has(name)),
        `${name} is not exported`,
      ).to.equal(true);
    }
    // Every panel reads something under each naming (the latency panels read either histogram).
    for (const exported of byNaming) {
      for (const expr of exprs) {
        expect(
          metricNames(expr).some((name) => exported.has(name)),
          expr,
        ).to.equal(true);
      }
    }
  });

  it('has the panels an operator looks for first', () => {
    const has = (pattern: RegExp) => exprs.some((e) => pattern.test(e));
    expect(has(/rate\(contracts_gateway_http_requests_total/), 'request rate').to.equal(true);
    expect(
      has(/sum by \(code, status\) \(rate\(contracts_gateway_error_responses_total/),
      'error rate by code',
    ).to.equal(true);
    expect(
      has(
        /histogram_quantile\(0\.5, sum by \(le, route\) \(rate\(contracts_gateway_http_request_duration_seconds_bucket/,
      ),
      'p50 per route',
    ).to.equal(true);
    expect(
      has(
        /histogram_quantile\(0\.99, sum by \(le, route\) \(rate\(contracts_gateway_http_request_duration_seconds_bucket/,
      ),
      'p99 per route',
    ).to.equal(true);
    expect(has(/contracts_gateway_bus_request_duration_seconds_bucket/), 'bus round trip').to.equal(true);
    expect(has(/contracts_gateway_contracts\b/), 'contracts known').to.equal(true);
  });

  it('is provisioned by the compose profile against the datasource it names', () => {
    const compose = parse(read('docker-compose.yml')) as {
      services: Record<string, { profiles?: string[]; volumes?: string[]; environment?: Record<string, string> }>;
    };
    const { prometheus, grafana, gateway } = compose.services;
    expect(prometheus?.profiles).to.deep.equal(['observability']);
    expect(grafana?.profiles).to.deep.equal(['observability']);
    for (const volume of [...(prometheus?.volumes ?? []), ...(grafana?.volumes ?? [])]) {
      expect(existsSync(join(ROOT, volume.split(':')[0]!)), volume).to.equal(true);
    }
    const scrape = parse(read('deploy/observability/prometheus.yml')) as {
      scrape_configs: Array<{ static_configs: Array<{ targets: string[] }> }>;
    };
    expect(scrape.scrape_configs[0]!.static_configs[0]!.targets).to.deep.equal([
      `gateway:${gateway?.environment?.METRICS_PORT}`,
    ]);
    const datasources = parse(read('deploy/observability/grafana/provisioning/datasources/prometheus.yml')) as {
      datasources: Array<{ uid: string; url: string }>;
    };
    const uid = datasources.datasources[0]!.uid;
    expect(datasources.datasources[0]!.url).to.equal('http://prometheus:9090');
    for (const panel of panels) {
      expect(panel.datasource?.uid, panel.title).to.equal(uid);
      for (const target of panel.targets ?? []) expect(target.datasource?.uid, panel.title).to.equal(uid);
    }
    const providers = parse(read('deploy/observability/grafana/provisioning/dashboards/dashboards.yml')) as {
      providers: Array<{ options: { path: string } }>;
    };
    const mounted = grafana?.volumes?.find((v) => v.includes('/dashboards:'))?.split(':')[1];
    expect(providers.providers[0]!.options.path).to.equal(mounted);
  });
});
