import type { Request } from 'express';
import { bodyOf } from '../request/body';
import { buildInput } from '../request/input';
import type { ResolvedContract } from './resolve-contract';
import type { RequestContext } from '../request/context';

/**
 * The input of the message, built once per pipeline run (schema validation and the router both use it):
 * body + path parameters + query string. On the generic routes the envelope is taken off first:
 * POST /api/actions { messageType, input }, GET /api/data?messageType=…&field=…. The body is read by the runner
 * before a step that needs the input (its `needs`, plugin/lifecycle/runner.ts); one that could not be read is
 * answered here by its own error.
 */
export function inputOf(ctx: RequestContext, req: Request, resolved: ResolvedContract): Record<string, unknown> {
  const run = ctx.run;
  return (run.input ??= build(ctx, req, resolved, bodyOf(ctx, req)));
}

function build(
  ctx: RequestContext,
  req: Request,
  resolved: ResolvedContract,
  rawBody: Record<string, unknown>,
): Record<string, unknown> {
  const query = { ...(req.query as Record<string, unknown>) };
  let body = rawBody;
  if (resolved.dispatched) {
    delete query.messageType;
    const inner = rawBody.input;
    body = inner && typeof inner === 'object' && !Array.isArray(inner) ? (inner as Record<string, unknown>) : {};
  }
  // Path parameters: Express's (one endpoint per route) or the path table's (routing: table).
  const params = ctx.tableMatch?.params ?? req.params ?? {};
  return buildInput({ body, query, params, schema: resolved.contract.inputSchema });
}
