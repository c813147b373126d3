import { STATUS_CODES, maxHeaderSize, type ServerResponse } from 'node:http';
import type { Request, Response } from 'express';
import type { Duplex } from 'node:stream';
import { GatewayError } from '../errors/gateway-error';
import { toErrorBody } from '../errors/error-body';
import { newTraceId } from '../request/ids';
import { traceOf } from '../request/trace';
import { sendError } from './respond';

type ParserError = Error & { code?: string; reason?: string };

/**
 * The answer to a request Node's HTTP parser refused, with the status Node itself would send (431 for oversized
 * headers, 413 for oversized chunk extensions, 408 for a request that took too long, else 400).
 */
function parserErrorAnswer(err: ParserError): GatewayError {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return new GatewayError(
        'HEADERS_TOO_LARGE',
        `The request line and headers are larger than ${maxHeaderSize} bytes`,
      );
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return new GatewayError('PAYLOAD_TOO_LARGE', 'The chunk extensions of the request body are too large');
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new GatewayError('REQUEST_TIMEOUT', 'The request was not received in time');
    case 'HPE_INVALID_METHOD':
      return new GatewayError('BAD_REQUEST', 'The request method is not recognised');
    case 'HPE_INVALID_CONTENT_LENGTH':
    case 'HPE_UNEXPECTED_CONTENT_LENGTH':
      // llhttp's reason says which: both framings at once, or a Content-Length that is not a number.
      return /Transfer-Encoding/i.test(err.reason ?? '')
        ? new GatewayError('BAD_REQUEST', 'A request may not carry both Transfer-Encoding and Content-Length')
        : new GatewayError('BAD_REQUEST', 'The Content-Length header is not valid');
    case 'HPE_INVALID_URL':
      return new GatewayError('BAD_REQUEST', 'The request target is malformed');
    default:
      return new GatewayError('BAD_REQUEST', 'The request is malformed HTTP (request line or headers)');
  }
}

/** The whole response, written on the socket as bytes: the parser failed, so there is no request or response object. */
function clientErrorResponse(err: ParserError): string {
  const correlationId = newTraceId();
  const { status, body, headers } = toErrorBody(parserErrorAnswer(err), correlationId);
  const payload = JSON.stringify(body);
  const lines = [
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(payload)}`,
    `X-Correlation-Id: ${correlationId}`,
    `X-Request-Id: ${newTraceId()}`,
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
    'Connection: close',
  ];
  return `${lines.join('\r\n')}\r\n\r\n${payload}`;
}

/**
 * Node's 'clientError': answer in the documented JSON error body where Node would have sent an empty one, then close.
 * A request whose body did not arrive in time (requestReceiveTimeoutMs) already has its response object, which the
 * pipeline may be waiting to use: the 408 goes through it, so it is counted and logged like any answer, and the
 * pipeline, its body read failing, finds the answer sent.
 */
export function onClientError(err: ParserError, socket: Duplex): void {
  const response = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage ?? undefined;
  // A reset connection, or one whose response has begun: nothing can be written (as Node does). A response whose
  // request arrived whole belongs to an earlier request than the one that failed: answers cannot be reordered.
  if (err.code === 'ECONNRESET' || !socket.writable || response?.headersSent || response?.req.complete) {
    socket.destroy();
    return;
  }
  if (response) {
    response.setHeader('Connection', 'close');
    sendError(
      response as Response,
      parserErrorAnswer(err),
      traceOf(response.req as Request, response as Response).correlationId,
    );
    return;
  }
  socket.end(clientErrorResponse(err));
}
