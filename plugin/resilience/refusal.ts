import { GatewayError } from '../errors/gateway-error';

/** Why the gateway answered for a service without sending the request: what the metrics and bus spans call it. */
export type RefusalReason = 'overload' | 'circuit_open' | 'maintenance';

/**
 * 503 SERVICE_UNAVAILABLE with Retry-After (header) and retryAfter (body), answered for a service by the gateway
 * itself: nothing was sent, so a retry (keyed or not) runs the command at most once.
 */
export class ServiceRefusal extends GatewayError {
  constructor(
    readonly reason: RefusalReason,
    service: string,
    message: string,
    retryAfterSeconds: number,
  ) {
    super('SERVICE_UNAVAILABLE', message, {
      status: 503,
      extra: { retryAfter: retryAfterSeconds, service },
      headers: { 'Retry-After': String(retryAfterSeconds) },
    });
  }
}

/** The seconds an overloaded service's callers are asked to wait: its queue drains in about that. */
const OVERLOAD_RETRY_AFTER_S = 1;

export function overloaded(service: string): ServiceRefusal {
  return new ServiceRefusal(
    'overload',
    service,
    `Service '${service}' has too many requests in progress`,
    OVERLOAD_RETRY_AFTER_S,
  );
}

export function circuitOpen(service: string, retryAfterSeconds: number): ServiceRefusal {
  return new ServiceRefusal(
    'circuit_open',
    service,
    `Service '${service}' is failing; requests to it are paused`,
    retryAfterSeconds,
  );
}

export function inMaintenance(service: string, retryAfterSeconds: number): ServiceRefusal {
  return new ServiceRefusal('maintenance', service, `Service '${service}' is in maintenance`, retryAfterSeconds);
}
