import { expect } from 'chai';
import { trace } from '@opentelemetry/api';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { BusCall } from '../../plugin/observability/bus-call';
import { tracing } from '../../plugin/observability/tracing';

describe('bus: spans only with an SDK', () => {
  // Once, at the end: disable() swaps the global proxy provider, which the plugin's tracer holds on to.
  after(() => trace.disable());

  it("makes no bus span without an SDK, and passes the caller's traceparent on as a span would", () => {
    expect(tracing()).to.equal(false);
    const call = new BusCall(
      undefined,
      'svc',
      'GetThingQuery',
      { kind: 'amqp', requestExchange: 'P.requests' },
      undefined,
    );
    expect((call as unknown as { span: unknown }).span).to.equal(undefined);
    const id = `${'a'.repeat(32)}-${'b'.repeat(16)}`;
    expect(call.traceparent(`00-${id}-03`)).to.equal(`00-${id}-01`);
    expect(call.traceparent(undefined)).to.equal(undefined);
    call.replied({ ok: true });
  });

  it('makes it once an SDK is registered', () => {
    trace.setGlobalTracerProvider(new BasicTracerProvider());
    expect(tracing()).to.equal(true);
    const call = new BusCall(
      undefined,
      'svc',
      'GetThingQuery',
      { kind: 'amqp', requestExchange: 'P.requests' },
      undefined,
    );
    expect((call as unknown as { span: unknown }).span).to.not.equal(undefined);
    expect(call.traceparent(undefined)).to.match(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    call.replied({ ok: true });
  });
});
