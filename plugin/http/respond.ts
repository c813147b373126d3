import type { Response } from 'express';
import { toErrorBody } from '../errors/error-body';
import { noteErrorCode } from '../observability/error-code';

const JSON_TYPE = 'application/json; charset=utf-8';

export function sendJson(res: Response, status: number, body: unknown): void {
  sendJsonText(res, status, body === undefined ? undefined : JSON.stringify(body));
}

/** A body already serialised (a service's result passed on as it came); none with 204. */
export function sendJsonText(res: Response, status: number, json: string | Buffer | undefined): void {
  res.statusCode = status;
  if (status === 204 || json === undefined) {
    res.end();
    return;
  }
  res.setHeader('Content-Type', JSON_TYPE);
  res.end(json);
}

/** Every error answer goes through here: the error body, its headers, and nothing internal. */
export function sendError(res: Response, err: unknown, correlationId?: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const { status, body, headers } = toErrorBody(err, correlationId);
  noteErrorCode(res, body.code);
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  sendJson(res, status, body);
}
