import type { IncomingMessage, ServerResponse } from 'node:http';
import { describeError } from '../errors/describe';
import { GatewayError } from '../errors/gateway-error';
import { toErrorBody } from '../errors/error-body';
import { newTraceId } from '../request/ids';
import type { Logger } from '../logger';

/**
 * What answers when nothing in the host's app did, or when something in it failed outside our policies
 * (e.g. Express cannot decode a path parameter). Without it Express's own final handler answers, and outside
 * NODE_ENV=production it sends the stack trace with the server's paths. Here: the JSON error body, always.
 */
export function finalHandler(
  req: IncomingMessage,
  res: ServerResponse,
  log?: Pick<Logger, 'warn'>,
): (err?: unknown) => void {
  return (err?: unknown) => {
    if (res.headersSent) {
      if (err) res.destroy();
      return;
    }
    req.resume();
    const correlationId = writeErrorBody(
      res,
      err ? fromHostError(err) : new GatewayError('NOT_FOUND', 'Nothing is served at this path'),
    );
    if (err) log?.warn(`[${correlationId}] request failed before any policy answered: ${describeError(err)}`);
  };
}

/**
 * The error body on a plain ServerResponse, for answers given outside Express's helpers (the final handler,
 * a stopping gateway's 503). Keeps the trace ids already set on the response, or sets new ones. Returns the correlation id.
 */
export function writeErrorBody(res: ServerResponse, err: unknown): string {
  const known = res.getHeader('X-Correlation-Id');
  const correlationId = typeof known === 'string' ? known : newTraceId();
  if (known === undefined) res.setHeader('X-Correlation-Id', correlationId);
  if (!res.hasHeader('X-Request-Id')) res.setHeader('X-Request-Id', newTraceId());
  const { status, body, headers } = toErrorBody(err, correlationId);
  res.statusCode = status;
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.end(JSON.stringify(body));
  return correlationId;
}

/** Express marks client errors with a 4xx `status`; anything else is ours to hide. */
function fromHostError(err: unknown): GatewayError {
  const status =
    (err as { status?: unknown; statusCode?: unknown })?.status ?? (err as { statusCode?: unknown })?.statusCode;
  if (status === 413) return new GatewayError('PAYLOAD_TOO_LARGE', 'The request body is too large');
  if (status === 415) return new GatewayError('UNSUPPORTED_MEDIA_TYPE', 'Unsupported request body');
  if (typeof status === 'number' && status >= 400 && status < 500)
    return new GatewayError('BAD_REQUEST', 'The request is malformed');
  return new GatewayError('INTERNAL_ERROR', 'An unexpected error occurred');
}
