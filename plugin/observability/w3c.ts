import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';

/**
 * W3C trace context and baggage: how the gateway reads a caller's trace context and passes it on to services when
 * the deployment registers no propagator (no SDK), so a caller's trace reaches the services even where the gateway
 * records nothing. Gateway side only: a service (the SDK) uses the propagators it registers.
 */
export const W3C_FALLBACK = new CompositePropagator({
  propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()],
});
