import { expect } from 'chai';
import { context, ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { BusCall } from '../../plugin/observability/bus-call';
import { extractFrom, tracing, type TraceCarrier } from '../../plugin/observability/tracing';

const AMQP = { kind: 'amqp', requestExchange: 'P.requests' };

describe('bus: spans only with an SDK', () => {
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
    trace.setGlobalTracerProvider(new BasicTracerProvider());
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
});
