import { PassThrough } from 'node:stream';
import type { IncomingMessage } from 'node:http';
import type { Request } from 'express';
import { requestContext, type RequestContext } from './context';
import { egContextOf } from '../host/eg-context';

/** express.json's `verify` hook: keeps the bytes it parsed, so the body can be sent on after it was read. */
export function keepRawBody(req: IncomingMessage, _res: unknown, buf: Buffer): void {
  requestContext(req as Request).rawBody = buf;
}

/**
 * A policy that read the body (schema-validation, a dispatch route) leaves the request stream consumed. The host's
 * `proxy` sends `req.egContext.requestStream` instead of the request when it is set (as its own request-transformer
 * does), so the read bytes are handed back there unchanged and a hand-written pipeline can proxy after validating.
 */
export function replayBodyForProxy(ctx: RequestContext, req: Request): void {
  const raw = ctx.rawBody;
  const run = egContextOf(req);
  if (!raw || !run || run.requestStream) return;
  const stream = new PassThrough();
  stream.end(raw);
  run.requestStream = stream;
}
