import { expect } from 'chai';
import { SpanKind } from '@opentelemetry/api';
import type { SpanLine } from './spans-file';
import { startTracedGateway, type TracedGateway } from './traced-gateway';
import { eventually, type GatewayProcess } from '../support/gateway-process';
import { http, httpAs } from '../support/http';

const admin = httpAs(['admin:all']);

describe('traces (OpenTelemetry, an SDK with an in-memory exporter registered in the gateway process)', function () {
  this.timeout(60000);
  let traced: TracedGateway;
  let gw: GatewayProcess;
  const spans = (): SpanLine[] => traced.spans();

  before(async () => {
    traced = await startTracedGateway('tracing-setup.js', { BUS_URL: 'embedded' });
    gw = traced.gw;
  });
  after(() => traced?.stop());

  it("continues the caller's traceparent: server span by route template, bus span, the service's span under it", async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const callerSpan = '00f067aa0ba902b7';
    const res = await admin('GET', `${gw.baseUrl}/api/users`, {
      headers: { traceparent: `00-${traceId}-${callerSpan}-01`, 'user-agent': 'contracts-tracing-test/1' },
    });
    expect(res.status, res.text).to.equal(200);
    const ofTrace = await eventually(async () => {
      const found = spans().filter((s) => s.traceId === traceId);
      expect(found).to.have.length(3);
      return found;
    });
    const server = ofTrace.find((s) => s.kind === SpanKind.SERVER && s.name.startsWith('GET '))!;
    const bus = ofTrace.find((s) => s.kind === SpanKind.PRODUCER)!;
    const handler = ofTrace.find((s) => s.kind === SpanKind.CONSUMER)!;
    expect(server.name).to.equal('GET /api/users');
    expect(server.parentSpanId).to.equal(callerSpan);
    expect(server.attributes).to.include({
      'http.route': '/api/users',
      'http.request.method': 'GET',
      'http.response.status_code': 200,
      'url.path': '/api/users',
      'url.scheme': 'http',
      'server.address': '127.0.0.1',
      'server.port': Number(new URL(gw.baseUrl).port),
      'client.address': '127.0.0.1',
      'user_agent.original': 'contracts-tracing-test/1',
    });
    expect(server.attributes).not.to.have.property('error.type');
    expect(server.attributes['contracts.correlation_id']).to.equal(res.headers.get('x-correlation-id'));
    expect(bus.parentSpanId).to.equal(server.spanId);
    // The embedded bus has no exchange: its destination is the service.
    expect(bus.name).to.equal('publish users-service');
    expect(bus.attributes).to.include({
      'messaging.system': 'inprocess',
      'messaging.operation.name': 'publish',
      'messaging.operation.type': 'send',
      'contracts.message_type': 'ListUsersQuery',
      'contracts.target_service': 'users-service',
      'messaging.destination.name': 'users-service',
      'contracts.outcome': 'reply',
    });
    // The service continued the trace from the traceparent header the gateway sent: the bus span's context.
    expect(handler.name).to.equal('process users-service');
    expect(handler.attributes).to.include({
      'messaging.operation.type': 'process',
      'contracts.message_type': 'ListUsersQuery',
    });
    expect(handler.parentSpanId).to.equal(bus.spanId);
  });

  it('starts a new trace when the caller sends none; a 4xx leaves the span status unset', async () => {
    const before = spans().length;
    const res = await http('GET', `${gw.baseUrl}/api/users/u-1234`);
    expect(res.status).to.equal(401);
    const server = await eventually(async () => {
      const found = spans()
        .slice(before)
        .find((s) => s.kind === SpanKind.SERVER && s.name.startsWith('GET '));
      expect(found).to.not.equal(undefined);
      return found!;
    });
    expect(server.name).to.equal('GET /api/users/:userId');
    expect(server.parentSpanId).to.equal(undefined);
    expect(server.attributes['http.response.status_code']).to.equal(401);
    expect(server.status.code).to.equal(0);
  });
});
