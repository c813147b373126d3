import { codeInfo, isKnownCode, type ErrorCode } from './codes';
import { GatewayError, badGateway, serviceUnavailable } from './gateway-error';

/** The error body of every error answer. Fields beyond these come from GatewayError.extra. */
export interface ErrorBody {
  error: string;
  message: string;
  code: ErrorCode;
  details?: Record<string, unknown>;
  correlationId?: string;
  timestamp: string;
  [extra: string]: unknown;
}

/** Fields a service or a GatewayError may not overwrite: they are the gateway's to set. */
const RESERVED = new Set(['error', 'message', 'code', 'details', 'correlationId', 'timestamp']);

/**
 * Builds the body for any thrown value. Anything that is not a GatewayError is an internal error whose
 * message is replaced: a driver message, a path or a stack must never reach the client.
 */
export function toErrorBody(
  err: unknown,
  correlationId?: string,
): { status: number; body: ErrorBody; headers: Record<string, string> } {
  const e = err instanceof GatewayError ? err : new GatewayError('INTERNAL_ERROR', 'An unexpected error occurred');
  const body: ErrorBody = {
    error: e.status === codeInfo(e.code).status ? codeInfo(e.code).error : reasonFor(e.status),
    message: e.message,
    code: e.code,
    timestamp: new Date().toISOString(),
  };
  if (e.details !== undefined) body.details = e.details;
  for (const [k, v] of Object.entries(e.extra)) if (!RESERVED.has(k)) body[k] = v;
  if (correlationId) body.correlationId = correlationId;
  return { status: e.status, body, headers: e.headers };
}

function reasonFor(status: number): string {
  switch (status) {
    case 422:
      return 'Validation failed';
    case 502:
      return 'Bad Gateway';
    case 503:
      return 'Service Unavailable';
    default:
      return codeInfo('INTERNAL_ERROR').error;
  }
}

/**
 * Maps a service's `{ ok: false, error }` reply to a GatewayError. Only known codes pass through;
 * the service's message is kept for 4xx (it is the service's answer to the caller) and replaced for 5xx.
 * `service` names the replying service on a 502, as the gateway's own 502s do.
 */
export function fromServiceError(error: unknown, service?: string): GatewayError {
  const e = (error && typeof error === 'object' ? error : {}) as Record<string, unknown>;
  if (!isKnownCode(e.code)) return new GatewayError('INTERNAL_ERROR', 'The service failed to handle the request');
  const code = e.code;
  let status = codeInfo(code).status;
  if (typeof e.status === 'number' && allowedStatus(code, e.status)) status = e.status;
  const retryAfter = retryAfterOf(e.retryAfter);
  if (code === 'SERVICE_UNAVAILABLE' && status === 503)
    return serviceUnavailable('The service is temporarily unavailable', retryAfter ?? 5);
  if (code === 'SERVICE_UNAVAILABLE' && service !== undefined) return badGateway(service);
  if (status >= 500) {
    return new GatewayError(
      code,
      code === 'INTERNAL_ERROR' ? 'The service failed to handle the request' : String(codeInfo(code).error),
      { status },
    );
  }
  const extra: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(e)) if (!RESERVED.has(k) && k !== 'status' && k !== 'retryAfter') extra[k] = v;
  if (retryAfter !== undefined) extra.retryAfter = retryAfter;
  const details =
    e.details && typeof e.details === 'object' && !Array.isArray(e.details)
      ? (e.details as Record<string, unknown>)
      : undefined;
  const message = typeof e.message === 'string' && e.message ? e.message : codeInfo(code).error;
  const headers: Record<string, string> = retryAfter !== undefined ? { 'Retry-After': String(retryAfter) } : {};
  return new GatewayError(code, message, { status, details, extra, headers });
}

/** The longest wait a service may ask a client for (a day); a reply's retryAfter is held to 1..this. */
const MAX_RETRY_AFTER_SECONDS = 86_400;

/**
 * A service's retryAfter as whole seconds in 1..MAX_RETRY_AFTER_SECONDS (body and Retry-After header alike), or
 * undefined when it is not a number: a reply is not trusted to pick the client's wait (1e300, -5, 0.2).
 */
function retryAfterOf(v: unknown): number | undefined {
  if (typeof v !== 'number' || !Number.isFinite(v)) return undefined;
  return Math.min(MAX_RETRY_AFTER_SECONDS, Math.max(1, Math.ceil(v)));
}

/** Some codes have two statuses; a service may pick between them and nothing else. */
function allowedStatus(code: ErrorCode, status: number): boolean {
  if (code === 'VALIDATION_ERROR') return status === 400 || status === 422;
  if (code === 'SERVICE_UNAVAILABLE') return status === 502 || status === 503;
  return status === codeInfo(code).status;
}
