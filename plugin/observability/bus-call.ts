import { GatewayError } from '../errors/gateway-error';
import { ServiceRefusal } from '../resilience/refusal';
import type { Reply } from '../bus/transport';
import type { BusOutcome, GatewayMetrics } from './metrics';
import { context, trace, type Context, type Span } from '@opentelemetry/api';
import { endBusSpan, injectInto, startBusSpan, tracing, type BusDestination, type TraceCarrier } from './tracing';
import { W3C_FALLBACK } from './w3c';

/** How a bus request ended, from its reply or from the error the transport rejected with (plugin/bus/transport.ts). */
export function busOutcome(result: { reply: Reply } | { error: unknown }): BusOutcome {
  if ('reply' in result) return result.reply.ok ? 'reply' : 'error_reply';
  const err = result.error;
  // Answered by the gateway for the service (plugin/resilience/): nothing was sent.
  if (err instanceof ServiceRefusal) return err.reason;
  if (!(err instanceof GatewayError)) return 'failed';
  if (err.code === 'TIMEOUT') return 'timeout';
  if (err.code !== 'SERVICE_UNAVAILABLE') return 'failed';
  if (err.status === 502) return 'connection_lost';
  // The transports' 503s differ only in their message (plugin/bus/failures.ts); a graceful stop's is `aborted`.
  if (err.message.startsWith('No instance of service')) return 'unroutable';
  return err.message.startsWith('The message bus') ? 'bus_unavailable' : 'aborted';
}

/**
 * One request over the bus: its span (child of the request's server span; none while no SDK is registered) and its
 * time from the send to the reply or failure. Made per request by the contract router; `replied` and `failed` are
 * the promise's handlers.
 */
export class BusCall {
  private readonly start = performance.now();
  private readonly span: Span | undefined;
  /** The context the message carries and the send runs in: the bus span's, else the request's. */
  private readonly ctx: Context;
  constructor(
    private readonly metrics: GatewayMetrics | undefined,
    private readonly service: string,
    messageType: string,
    bus: BusDestination,
    /** The request's context (request-observer.ts traceContextOf): its server span, the caller's trace, baggage. */
    parent: Context,
  ) {
    this.span = tracing() ? startBusSpan(parent, messageType, service, bus) : undefined;
    this.ctx = this.span ? trace.setSpan(parent, this.span) : parent;
  }

  /**
   * Writes the trace context the message carries into its headers (traceparent, tracestate, baggage): this span's,
   * so the service's spans are its children; with no span, the caller's, as that span would have passed it on.
   */
  inject(headers: TraceCarrier): void {
    injectInto(this.ctx, headers, W3C_FALLBACK);
  }

  /** Runs the send with this span active, so a messaging instrumentation's spans (amqplib's publish) nest under it. */
  run<T>(send: () => T): T {
    return this.span ? context.with(this.ctx, send) : send();
  }

  replied(reply: Reply): void {
    this.ended(busOutcome({ reply }));
  }

  failed(error: unknown): void {
    this.ended(busOutcome({ error }));
  }

  private ended(outcome: BusOutcome): void {
    this.metrics?.busRoundTrip(this.service, outcome, (performance.now() - this.start) / 1000);
    if (this.span) endBusSpan(this.span, outcome);
  }
}
