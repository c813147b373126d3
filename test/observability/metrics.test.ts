import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startGateway, type GatewayProcess } from '../support/gateway-process';
import { http, httpAs } from '../support/http';
import { freePort } from '../support/env';
import { referenceContracts } from '../openapi/support';
import { scrape, sample, labelValues, seriesCount } from './support';
import { PROMTOOL_MISSING, promtoolCheck } from './promtool';
import { prometheusInstalled, startPrometheus } from './prometheus-server';

/** What Prometheus 2.x sends (3.x adds `escaping=…` to each range). */
const PROMETHEUS_ACCEPT =
  'application/openmetrics-text;version=1.0.0;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2';

const P = 'contracts_gateway_';
const ROOT = join(__dirname, '..', '..', '..');

/** The queries of the dashboard's request-latency panels, over a minute instead of Grafana's `$__rate_interval`. */
function latencyPanelQueries(): string[] {
  const dashboard = JSON.parse(
    readFileSync(join(ROOT, 'deploy/observability/grafana/dashboards/contracts-gateway.json'), 'utf8'),
  ) as { panels: Array<{ targets?: Array<{ expr: string }> }> };
  const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
  const latency = exprs.filter((e) => e.includes('http_request_duration_seconds_bucket'));
  expect(latency).to.have.length(2);
  return latency.map((e) => e.replaceAll('$__rate_interval', '1m'));
}

/** The gateway of a describe, with metrics on a port of its own (embedded bus, no access log), started in before(). */
function withMetricsGateway(env: Record<string, string> = {}): { gw: GatewayProcess; metricsUrl: string } {
  const started = {} as { gw: GatewayProcess; metricsUrl: string };
  before(async () => {
    const port = await freePort();
    started.gw = await startGateway({
      BUS_URL: 'embedded',
      METRICS_PORT: String(port),
      METRICS_HOST: '127.0.0.1',
      ACCESS_LOG: 'false',
      ...env,
    });
    started.metricsUrl = `http://127.0.0.1:${port}/metrics`;
  });
  after(async () => started.gw?.stop());
  return started;
}

/**
 * Has a real Prometheus scrape the gateway (OpenMetrics, its default) and checks the scrape, the series it stored and
 * that the dashboard's latency panels read the `/health` requests from them. Skipped, saying so, without Prometheus.
 */
async function checkWithPrometheus(ctx: Mocha.Context, metricsUrl: string, baseUrl: string, bucketQuery: string) {
  if (!prometheusInstalled()) {
    console.log(`      Prometheus's server is not installed (Debian: apt-get install prometheus): skipped`);
    ctx.skip();
  }
  const prometheus = await startPrometheus(new URL(metricsUrl).host);
  try {
    expect(await prometheus.firstScrape()).to.deep.equal({ health: 'up', lastError: '' });
    // Requests after the first scrape, so the rates the panels read are above 0.
    for (let i = 0; i < 5; i++) expect((await http('GET', `${baseUrl}/health`)).status).to.equal(200);
    await new Promise((resolve) => setTimeout(resolve, 3000));
    expect(await prometheus.query(`${P}http_requests_total{route="/health",status="200"}`)).to.have.length(1);
    expect((await prometheus.query(bucketQuery)).length).to.be.above(10);
    expect(await prometheus.query('process_cpu_seconds_total')).to.have.length(1);
    for (const expr of latencyPanelQueries()) {
      const health = (await prometheus.query(expr)).find((series) => series.metric.route === '/health');
      expect(health, expr).not.to.equal(undefined);
      expect(Number(health?.value[1]), expr).to.be.above(0);
    }
  } finally {
    await prometheus.stop();
  }
}
const admin = httpAs(['admin:all']);

describe('GET /metrics (Prometheus, on its own port)', function () {
  this.timeout(120000);
  const t = withMetricsGateway();

  it('is not served on the API port', async () => {
    expect((await http('GET', `${t.gw.baseUrl}/metrics`)).status).to.equal(404);
    expect((await http('GET', t.metricsUrl.replace('/metrics', '/other'))).status).to.equal(404);
  });

  it('counts requests by route template, method and status, and their durations', async () => {
    const before = await scrape(t.metricsUrl);
    for (let i = 0; i < 3; i++) expect((await http('GET', `${t.gw.baseUrl}/health`)).status).to.equal(200);
    expect((await admin('GET', `${t.gw.baseUrl}/api/users`)).status).to.equal(200);
    const after = await scrape(t.metricsUrl);
    const delta = (name: string, labels: Record<string, string>) =>
      sample(after, name, labels) - sample(before, name, labels);
    expect(after.types.get(`${P}http_requests_total`)).to.equal('COUNTER');
    expect(delta(`${P}http_requests_total`, { route: '/health', method: 'GET', status: '200' })).to.equal(3);
    expect(delta(`${P}http_requests_total`, { route: '/api/users', method: 'GET', status: '200' })).to.equal(1);
    expect(after.types.get(`${P}http_request_duration_seconds`)).to.equal('HISTOGRAM');
    expect(
      delta(`${P}http_request_duration_seconds_count`, { route: '/health', method: 'GET', status: '200' }),
    ).to.equal(3);
    // The bus round trip of GET /api/users: one reply from users-service.
    expect(delta(`${P}bus_request_duration_seconds_count`, { service: 'users-service', outcome: 'reply' })).to.equal(1);
    expect(sample(after, `${P}http_requests_in_flight`)).to.equal(0);
  });

  it('counts authentication failures and error answers by code', async () => {
    const before = await scrape(t.metricsUrl);
    expect((await http('GET', `${t.gw.baseUrl}/api/users`)).status).to.equal(401);
    expect(
      (await http('GET', `${t.gw.baseUrl}/api/users`, { headers: { authorization: 'Bearer not-a-token' } })).status,
    ).to.equal(401);
    expect((await http('GET', `${t.gw.baseUrl}/api/no-such-thing`)).status).to.equal(404);
    const after = await scrape(t.metricsUrl);
    const delta = (name: string, labels: Record<string, string>) =>
      sample(after, name, labels) - sample(before, name, labels);
    expect(delta(`${P}auth_failures_total`, { code: 'NO_AUTH_HEADER' })).to.equal(1);
    expect(delta(`${P}auth_failures_total`, { code: 'INVALID_TOKEN' })).to.equal(1);
    expect(delta(`${P}error_responses_total`, { code: 'HANDLER_NOT_FOUND', status: '404' })).to.equal(1);
    expect(delta(`${P}http_requests_total`, { route: '/api/users', status: '401' })).to.equal(2);
    // The durations of the refusals apart from those of the answers: error latency has series of its own.
    expect(delta(`${P}http_request_duration_seconds_count`, { route: '/api/users', status: '401' })).to.equal(2);
    expect(delta(`${P}http_request_duration_seconds_count`, { route: '/api/users', status: '200' })).to.equal(0);
    const slow401 = delta(`${P}http_request_duration_seconds_bucket`, {
      route: '/api/users',
      status: '401',
      le: '+Inf',
    });
    expect(slow401).to.equal(2);
  });

  it('reports the contracts, services, instances, announcements and the bus state', async () => {
    const m = await scrape(t.metricsUrl);
    expect(sample(m, `${P}contracts`)).to.equal(referenceContracts().length);
    expect(sample(m, `${P}services`)).to.equal(2);
    expect(sample(m, `${P}service_instances`)).to.equal(2);
    expect(sample(m, `${P}announcements_total`, { outcome: 'accepted' })).to.be.at.least(2);
    expect(sample(m, `${P}bus_connection_state`, { state: 'up' })).to.equal(1);
    expect(sample(m, `${P}bus_connection_state`, { state: 'down' })).to.equal(0);
    expect(sample(m, `${P}bus_reconnects_total`)).to.equal(0);
    // Node's default process metrics.
    expect(m.types.get('process_cpu_seconds_total')).to.equal('COUNTER');
    expect(m.types.has('nodejs_eventloop_lag_seconds')).to.equal(true);
  });

  it('keeps the label set bounded with 10,000 distinct ids requested', async () => {
    const before = await scrape(t.metricsUrl);
    const seriesBefore = seriesCount(before, `${P}http_requests_total`);
    const ids = Array.from({ length: 10_000 }, (_, i) => `user-${i}-${Math.random().toString(36).slice(2)}`);
    // 16 callers at a time: unauthenticated GET /api/users/:userId answers 401 without a bus round trip.
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < ids.length) {
          const id = ids[next++]!;
          const res = await fetch(`${t.gw.baseUrl}/api/users/${id}`);
          await res.arrayBuffer();
        }
      }),
    );
    const after = await scrape(t.metricsUrl);
    expect(
      sample(after, `${P}http_requests_total`, { route: '/api/users/:userId', status: '401' }) -
        sample(before, `${P}http_requests_total`, { route: '/api/users/:userId', status: '401' }),
    ).to.equal(10_000);
    const routes = labelValues(after, `${P}http_requests_total`, 'route');
    for (const route of routes) expect(route, 'a raw path in a label').not.to.match(/user-\d/);
    expect(seriesCount(after, `${P}http_requests_total`)).to.be.at.most(seriesBefore + 1);
    expect(seriesCount(after, `${P}http_request_duration_seconds_count`)).to.be.below(20);
  });

  it('passes `promtool check metrics` on everything it serves, after the requests above', async function () {
    const text = await (await fetch(t.metricsUrl)).text();
    // prom-client's `nodejs_active_*_total` gauges are left out (a gauge named like a counter); `type` sums stay.
    expect(text).not.to.match(/^nodejs_active_\w+_total/m);
    expect(text).to.match(/^nodejs_active_handles\{type="\w+"\} \d+$/m);
    const verdict = promtoolCheck(text);
    if (verdict === undefined) {
      console.log(`      ${PROMTOOL_MISSING}`);
      this.skip();
    }
    expect(verdict.output, 'what promtool found').to.equal('');
    expect(verdict.status).to.equal(0);
  });

  it('answers OpenMetrics when the scraper prefers it, and the text format after it as before', async () => {
    const open = await fetch(t.metricsUrl, { headers: { accept: PROMETHEUS_ACCEPT } });
    expect(open.headers.get('content-type')).to.equal('application/openmetrics-text; version=1.0.0; charset=utf-8');
    expect(open.headers.get('vary')).to.equal('Accept');
    const body = await open.text();
    expect(body.endsWith('\n# EOF\n')).to.equal(true);
    // A counter's family is named without `_total`, its samples with it.
    expect(body).to.match(/^# TYPE contracts_gateway_http_requests counter$/m);
    expect(body).to.match(/^contracts_gateway_http_requests_total\{route="\/health",method="GET",status="200"\} \d+$/m);
    expect(body).to.match(/^# TYPE process_cpu_seconds counter$/m);
    // The text format after an OpenMetrics scrape: the counters keep their `_total` names.
    const text = await fetch(t.metricsUrl);
    expect(text.headers.get('content-type')).to.equal('text/plain; version=0.0.4; charset=utf-8');
    const plain = await text.text();
    expect(plain).to.match(/^# TYPE contracts_gateway_http_requests_total counter$/m);
    expect(plain).to.match(/^# TYPE process_cpu_seconds_total counter$/m);
    expect(plain).not.to.contain('# EOF');
    expect(promtoolCheck(plain)?.output ?? '').to.equal('');
  });

  it('is scraped by a real Prometheus, in OpenMetrics, without an error, and feeds the latency panels', async function () {
    await checkWithPrometheus(
      this,
      t.metricsUrl,
      t.gw.baseUrl,
      `${P}http_request_duration_seconds_bucket{route="/health",status="200"}`,
    );
  });
});

describe('GET /metrics: rate-limited answers', function () {
  this.timeout(60000);
  const t = withMetricsGateway({ RATE_LIMIT_MAX: '2' });

  it('counts 429 answers by route template', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await admin('GET', `${t.gw.baseUrl}/api/users`)).status);
    expect(statuses.filter((s) => s === 429)).to.have.length(2);
    const m = await scrape(t.metricsUrl);
    expect(sample(m, `${P}rate_limited_total`, { route: '/api/users' })).to.equal(2);
    expect(sample(m, `${P}http_requests_total`, { route: '/api/users', status: '429' })).to.equal(2);
  });
});

describe('GET /metrics with METRICS_NAMING=otel', function () {
  this.timeout(120000);
  const t = withMetricsGateway({ METRICS_NAMING: 'otel' });

  it("names the request-duration histogram after OpenTelemetry's HTTP semantic conventions", async () => {
    const before = await scrape(t.metricsUrl);
    for (let i = 0; i < 2; i++) expect((await http('GET', `${t.gw.baseUrl}/health`)).status).to.equal(200);
    expect((await http('GET', `${t.gw.baseUrl}/api/users`)).status).to.equal(401);
    const after = await scrape(t.metricsUrl);
    const delta = (name: string, labels: Record<string, string>) =>
      sample(after, name, labels) - sample(before, name, labels);
    const H = 'http_server_request_duration_seconds';
    expect(after.types.get(H)).to.equal('HISTOGRAM');
    expect(
      delta(`${H}_count`, { http_route: '/health', http_request_method: 'GET', http_response_status_code: '200' }),
    ).to.equal(2);
    expect(delta(`${H}_count`, { http_route: '/api/users', http_response_status_code: '401' })).to.equal(1);
    expect(after.types.has(`${P}http_request_duration_seconds`)).to.equal(false);
    // The gateway's other series keep their names.
    expect(delta(`${P}http_requests_total`, { route: '/health', method: 'GET', status: '200' })).to.equal(2);
    const verdict = promtoolCheck(await (await fetch(t.metricsUrl)).text());
    if (verdict) expect(verdict.output, 'what promtool found').to.equal('');
  });

  it('is scraped by a real Prometheus and feeds the same latency panels', async function () {
    await checkWithPrometheus(
      this,
      t.metricsUrl,
      t.gw.baseUrl,
      'http_server_request_duration_seconds_bucket{http_route="/health",http_response_status_code="200"}',
    );
  });
});
