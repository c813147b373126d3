import { GatewayError, serviceUnavailable } from '../errors/gateway-error';
import { BUS_RETRY_AFTER_S } from './constants';

/*
 * The errors of the Transport failure contract (transport.ts) that both transports raise, one builder each, so the
 * embedded bus and RabbitMQ answer a caller alike. (502 and 504 come from errors/gateway-error as they are.)
 */

export function busNotConnected(service?: string): GatewayError {
  return serviceUnavailable(
    'The message bus is not connected',
    BUS_RETRY_AFTER_S,
    service === undefined ? {} : { service },
  );
}

/**
 * The bus is up, but the channel a request to `service` needs is not open: its reply consumer or the request channel
 * is opening, or the broker refuses it (a vhost's queue limit; GET /health lists it under `bus.refused`).
 */
export function busChannelNotOpen(service: string): GatewayError {
  return serviceUnavailable(
    "The message bus is up, but the gateway's channel for this service is not open yet",
    BUS_RETRY_AFTER_S,
    { service },
  );
}

/** RabbitMQ holds back what the connection publishes (a memory or disk alarm): refused at once, not left to hang. */
export function busBlocked(service?: string): GatewayError {
  return serviceUnavailable(
    'The message bus is blocked by a broker alarm',
    BUS_RETRY_AFTER_S,
    service === undefined ? {} : { service },
  );
}

/** A keyed request in flight when the connection was lost: its key makes sending it again safe. */
export function busLostKeyed(service: string): GatewayError {
  return serviceUnavailable(
    'The message bus connection was lost: send the request again with the same Idempotency-Key',
    BUS_RETRY_AFTER_S,
    { service },
  );
}

export function busClosing(service: string): GatewayError {
  return serviceUnavailable('The message bus is closing', BUS_RETRY_AFTER_S, { service });
}

export function noInstance(service: string): GatewayError {
  return serviceUnavailable(`No instance of service '${service}' is available`, BUS_RETRY_AFTER_S, { service });
}

export function busRefused(service?: string): GatewayError {
  return serviceUnavailable(
    'The message bus did not accept the message',
    BUS_RETRY_AFTER_S,
    service === undefined ? {} : { service },
  );
}

export function notEncodable(): GatewayError {
  return new GatewayError('INTERNAL_ERROR', 'The request could not be encoded');
}
