import { expect } from 'chai';
import { SpanKind } from '@opentelemetry/api';
import type { SpanLine } from './spans-file';
import { startTracedGateway, type TracedGateway } from './traced-gateway';
import { eventually, type GatewayProcess } from '../support/gateway-process';
import { httpAs } from '../support/http';
import { AMQP_URL } from '../support/env';

const PLUGIN = 'express-gateway-plugin-contracts';
const HTTP = '@opentelemetry/instrumentation-http';
const AMQPLIB = '@opentelemetry/instrumentation-amqplib';
const admin = httpAs(['admin:all']);

describe('traces with the common set-up (NodeSDK, the HTTP and amqplib instrumentations, RabbitMQ)', function () {
  this.timeout(60000);
  let traced: TracedGateway;
  let gw: GatewayProcess;
  const spans = (): SpanLine[] => traced.spans();

  before(async () => {
    traced = await startTracedGateway('node-sdk-setup.js', {
      BUS_URL: AMQP_URL,
      // The spans go to the test's processor only: no exporter of the SDK's own tries to reach a collector.
      OTEL_TRACES_EXPORTER: 'none',
      OTEL_METRICS_EXPORTER: 'none',
      OTEL_LOGS_EXPORTER: 'none',
    });
    gw = traced.gw;
  });
  after(() => traced?.stop());

  it('gives a request one SERVER span, the PRODUCER under it and the service CONSUMER under that', async () => {
    const traceId = '5bf92f3577b34da6a3ce929d0e0e4737';
    const callerSpan = '10f067aa0ba902b8';
    const res = await admin('GET', `${gw.baseUrl}/api/users`, {
      headers: {
        traceparent: `00-${traceId}-${callerSpan}-01`,
        tracestate: 'vendor=x1',
        baggage: 'tenant=t-1',
      },
    });
    expect(res.status, res.text).to.equal(200);
    const find = (found: SpanLine[], scope: string, kind: SpanKind): SpanLine[] =>
      found.filter((s) => s.scope === scope && s.kind === kind);
    const ofTrace = await eventually(async () => {
      const found = spans().filter((s) => s.traceId === traceId);
      expect(find(found, PLUGIN, SpanKind.CONSUMER), JSON.stringify(found)).to.have.length(1);
      expect(find(found, HTTP, SpanKind.SERVER)).to.have.length(1);
      return found;
    });
    const tree = JSON.stringify(ofTrace, null, 1);
    const byId = new Map(ofTrace.map((s) => [s.spanId, s]));
    const ancestors = (s: SpanLine): SpanLine[] => {
      const up: SpanLine[] = [];
      for (let p = byId.get(s.parentSpanId ?? ''); p; p = byId.get(p.parentSpanId ?? '')) up.push(p);
      return up;
    };

    // One SERVER span: the HTTP instrumentation's, enriched by the plugin (no second one of its own).
    const servers = ofTrace.filter((s) => s.kind === SpanKind.SERVER);
    expect(servers, tree).to.have.length(1);
    const server = servers[0]!;
    expect(server.scope).to.equal(HTTP);
    expect(server.name).to.equal('GET /api/users');
    expect(server.parentSpanId).to.equal(callerSpan);
    expect(server.attributes).to.include({ 'http.route': '/api/users', 'http.response.status_code': 200 });
    expect(server.attributes['contracts.correlation_id']).to.equal(res.headers.get('x-correlation-id'));

    // The plugin's PRODUCER under it, active while the message is sent: amqplib's publish span nests under it.
    const [producer] = find(ofTrace, PLUGIN, SpanKind.PRODUCER);
    expect(producer, tree).to.not.equal(undefined);
    expect(producer!.parentSpanId).to.equal(server.spanId);
    expect(producer!.attributes).to.include({
      'contracts.message_type': 'ListUsersQuery',
      'contracts.outcome': 'reply',
    });
    const publishes = find(ofTrace, AMQPLIB, SpanKind.PRODUCER).filter((s) => s.parentSpanId === producer!.spanId);
    expect(publishes, tree).to.have.length(1);

    // The service's CONSUMER under the PRODUCER (through amqplib's publish and consume spans of that message).
    const [consumer] = find(ofTrace, PLUGIN, SpanKind.CONSUMER);
    expect(consumer!.name).to.match(/^process .*\.requests$/);
    expect(
      ancestors(consumer!).map((s) => s.spanId),
      tree,
    ).to.include(producer!.spanId);
    // Nothing of the request outside the tree rooted at the server span.
    for (const s of ofTrace) if (s !== server) expect(ancestors(s), `${s.name}\n${tree}`).to.include(server);

    // tracestate and baggage travelled with it: the service's span has the caller's trace state, and its code runs
    // with the caller's baggage.
    expect(consumer!.traceState).to.equal('vendor=x1');
    expect(consumer!.baggage).to.deep.equal({ tenant: 't-1' });
  });
});
