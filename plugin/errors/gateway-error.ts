import { codeInfo, type ErrorCode } from './codes';

/**
 * An error meant for the client. `extra` carries the code-specific fields
 * (requiredPermission, resourceType, retryAfter, timeoutMs, …); `status` overrides the table
 * where a code has two (SERVICE_UNAVAILABLE 502/503, VALIDATION_ERROR 400/422).
 */
export class GatewayError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details?: Record<string, unknown>;
  readonly extra: Record<string, unknown>;
  /** Response headers the error needs (Retry-After, WWW-Authenticate). */
  readonly headers: Record<string, string>;

  constructor(
    code: ErrorCode,
    message: string,
    opts: {
      status?: number;
      details?: Record<string, unknown>;
      extra?: Record<string, unknown>;
      headers?: Record<string, string>;
    } = {},
  ) {
    super(message);
    this.name = 'GatewayError';
    this.code = code;
    this.status = opts.status ?? codeInfo(code).status;
    this.details = opts.details;
    this.extra = opts.extra ?? {};
    this.headers = opts.headers ?? {};
  }
}

/** 503 that tells the client when to come back (Retry-After on 503, retryAfter in the body). */
export function serviceUnavailable(
  message: string,
  retryAfterSeconds = 5,
  extra: Record<string, unknown> = {},
): GatewayError {
  return new GatewayError('SERVICE_UNAVAILABLE', message, {
    status: 503,
    extra: { retryAfter: retryAfterSeconds, ...extra },
    headers: { 'Retry-After': String(retryAfterSeconds) },
  });
}

/** 502: the upstream went away while the request was with it. */
export function badGateway(service: string, message = 'The upstream service is not responding'): GatewayError {
  return new GatewayError('SERVICE_UNAVAILABLE', message, { status: 502, extra: { service } });
}

export function gatewayTimeout(timeoutMs: number): GatewayError {
  return new GatewayError('TIMEOUT', 'The upstream service did not answer in time', { extra: { timeoutMs } });
}
