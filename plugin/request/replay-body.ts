import type { IncomingMessage } from 'node:http';
import type { Request } from 'express';
import { requestContext, type RequestContext } from './context';
import { handBodyToProxy } from '../host/eg-context';

/** express.json's `verify` hook: keeps the bytes it parsed, so the body can be sent on after it was read. */
export function keepRawBody(req: IncomingMessage, _res: unknown, buf: Buffer): void {
  requestContext(req as Request).rawBody = buf;
}

/**
 * A policy that read the body (schema-validation, a dispatch route) leaves the request stream consumed; the host's
 * proxy can be handed the bytes that were read instead (plugin/host/eg-context.ts), so a hand-written pipeline can
 * proxy after validating.
 */
export function replayBodyForProxy(ctx: RequestContext, req: Request): void {
  const raw = ctx.rawBody;
  if (raw) handBodyToProxy(req, raw);
}
