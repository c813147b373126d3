import { GatewayError } from '../errors';
import type { Reply } from '../bus/transport';
import type { BusOutcome, GatewayMetrics } from './metrics';

/** How a bus request ended, from its reply or from the error the transport rejected with (plugin/bus/transport.ts). */
export function busOutcome(result: { reply: Reply } | { error: unknown }): BusOutcome {
  if ('reply' in result) return result.reply.ok ? 'reply' : 'error_reply';
  const err = result.error;
  if (!(err instanceof GatewayError)) return 'failed';
  if (err.code === 'TIMEOUT') return 'timeout';
  if (err.code !== 'SERVICE_UNAVAILABLE') return 'failed';
  if (err.status === 502) return 'connection_lost';
  return err.message.startsWith('No instance of service') ? 'unroutable' : 'aborted';
}

/**
 * One request over the bus, timed from the send to its reply or failure. Made per request by the contract router;
 * `replied` and `failed` are the promise's handlers.
 */
export class BusCall {
  private readonly start = performance.now();
  constructor(
    private readonly metrics: GatewayMetrics | undefined,
    private readonly service: string,
  ) {}

  replied(reply: Reply): void {
    this.metrics?.busRoundTrip(this.service, busOutcome({ reply }), (performance.now() - this.start) / 1000);
  }

  failed(error: unknown): void {
    this.metrics?.busRoundTrip(this.service, busOutcome({ error }), (performance.now() - this.start) / 1000);
  }
}
