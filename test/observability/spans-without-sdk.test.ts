import { expect } from 'chai';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { context, ROOT_CONTEXT, SpanKind, trace, type Span } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { BusCall } from '../../plugin/observability/bus-call';
import { RequestObserver, type RequestHandler } from '../../plugin/observability/request-observer';
import { extractFrom as extract, tracing, type TraceCarrier } from '../../plugin/observability/tracing';
import { W3C_FALLBACK } from '../../plugin/observability/w3c';

/** A caller's headers as the gateway reads them with no propagator registered. */
const extractFrom = (headers: Record<string, string>) => extract(headers, W3C_FALLBACK);

const AMQP = { kind: 'amqp', requestExchange: 'P.requests' };

/** Serves one GET through `observer` (as plugin/host/servers.ts hands it requests), `wrap` around it; the span active in the handler. */
async function activeInHandler(
  observer: RequestObserver,
  wrap: (run: () => void, res: http.ServerResponse) => void,
): Promise<Span | undefined> {
  let active: Span | undefined;
  const handle: RequestHandler = (_req, res) => {
    active = trace.getActiveSpan();
    res.end('ok');
  };
  const server = http.createServer((req, res) => wrap(() => observer.observe(req, res, handle), res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/x`);
    await res.text();
    await new Promise((resolve) => setTimeout(resolve, 50)); // spans end when the response closes
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
  return active;
}

describe('spans only with an SDK', () => {
  const exporter = new InMemorySpanExporter();

  // Once, at the end: disable() swaps the global proxy provider, which the plugin's tracer holds on to.
  after(() => {
    trace.disable();
    context.disable();
  });

  it("makes no bus span without an SDK, and passes the caller's trace context and baggage on as a span would", () => {
    expect(tracing()).to.equal(false);
    const id = `${'a'.repeat(32)}-${'b'.repeat(16)}`;
    const caller = extractFrom({ traceparent: `00-${id}-03`, tracestate: 'vendor=x1', baggage: 'tenant=t-1' });
    const call = new BusCall(undefined, 'svc', 'GetThingQuery', AMQP, caller);
    expect((call as unknown as { span: unknown }).span).to.equal(undefined);
    const headers: TraceCarrier = {};
    call.inject(headers);
    // W3C trace context and baggage with no propagator registered; the caller's flags as it set them.
    expect(headers).to.deep.equal({ traceparent: `00-${id}-03`, tracestate: 'vendor=x1', baggage: 'tenant=t-1' });
    call.replied({ ok: true });

    const none: TraceCarrier = {};
    new BusCall(undefined, 'svc', 'GetThingQuery', AMQP, ROOT_CONTEXT).inject(none);
    expect(none).to.deep.equal({});
  });

  it('passes on no invalid trace context (an all-zero trace id, version ff)', () => {
    for (const traceparent of [
      `00-${'0'.repeat(32)}-${'b'.repeat(16)}-01`,
      `ff-${'a'.repeat(32)}-${'b'.repeat(16)}-01`,
    ]) {
      const headers: TraceCarrier = {};
      new BusCall(undefined, 'svc', 'GetThingQuery', AMQP, extractFrom({ traceparent })).inject(headers);
      expect(headers, traceparent).to.not.have.property('traceparent');
    }
  });

  it('makes it once an SDK is registered, and the message carries its context', () => {
    trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    expect(tracing()).to.equal(true);
    const traceId = 'c'.repeat(32);
    const caller = extractFrom({ traceparent: `00-${traceId}-${'d'.repeat(16)}-01` });
    const call = new BusCall(undefined, 'svc', 'GetThingQuery', AMQP, caller);
    const span = (call as unknown as { span: { spanContext(): { spanId: string } } | undefined }).span;
    expect(span).to.not.equal(undefined);
    const headers: TraceCarrier = {};
    call.inject(headers);
    expect(headers.traceparent).to.equal(`00-${traceId}-${span!.spanContext().spanId}-01`);
    // The send runs with the bus span active: a messaging instrumentation's spans nest under it.
    expect(call.run(() => trace.getActiveSpan())).to.equal(span);
    call.replied({ ok: true });
  });

  it("runs the host's listeners with the request's server span active", async () => {
    exporter.reset();
    const active = await activeInHandler(new RequestObserver(), (run) => run());
    const servers = exporter.getFinishedSpans().filter((s) => s.kind === SpanKind.SERVER);
    expect(servers).to.have.length(1);
    expect(servers[0]!.instrumentationScope.name).to.equal('express-gateway-plugin-contracts');
    expect(active?.spanContext().spanId).to.equal(servers[0]!.spanContext().spanId);
  });

  it("enriches a SERVER span already active (an HTTP instrumentation's) rather than opening a second", async () => {
    exporter.reset();
    const instrumentation = trace.getTracer('an-http-instrumentation');
    const active = await activeInHandler(new RequestObserver(), (run, res) => {
      const span = instrumentation.startSpan('GET', { kind: SpanKind.SERVER });
      // As instrumentation-http does: its span ends on the response's close, its listener added before the observer's.
      res.on('close', () => span.end());
      context.with(trace.setSpan(ROOT_CONTEXT, span), run);
    });
    const servers = exporter.getFinishedSpans().filter((s) => s.kind === SpanKind.SERVER);
    expect(servers).to.have.length(1);
    const [server] = servers;
    expect(server!.instrumentationScope.name).to.equal('an-http-instrumentation');
    expect(active?.spanContext().spanId).to.equal(server!.spanContext().spanId);
    // Named by the route and given http.route before the instrumentation ended it (no route matched here).
    expect(server!.name).to.equal('GET unmatched');
    expect(server!.attributes).to.include({ 'http.route': 'unmatched' });
    expect(server!.attributes['contracts.request_id']).to.be.a('string');
  });
});
