import type { Request } from 'express';
import { bodyOf, bodyToRead, type BodyLimits, type BodyNeed } from '../request/body';
import { buildInput } from '../request/input';
import { routeOf, type ResolvedContract, type RouteAction } from './resolve-contract';
import { tableMatchOf } from '../routing/table-match';
import { requestState } from '../request/state';

declare module '../request/state' {
  interface RequestState {
    /** The message's input, built once (schema-validation and contract-router both use it). */
    input?: Record<string, unknown>;
  }
}

/**
 * The input of the message, built once per request (schema validation and the router both use it):
 * body + path parameters + query string. On the generic routes the envelope is taken off first:
 * POST /api/actions { messageType, input }, GET /api/data?messageType=…&field=…. The body is read by the runner
 * before a step that needs the input (bodyToRead, plugin/lifecycle/runner.ts); one that could not be read is
 * answered here by its own error.
 */
export function inputOf(req: Request, resolved: ResolvedContract): Record<string, unknown> {
  const state = requestState(req);
  return (state.input ??= build(req, resolved, bodyOf(req)));
}

/**
 * What a step that builds the input declares: the body, whenever the request has one still to read and the step gets
 * as far as the input (`reaches`: its contract resolves and it lets the request on), so a request it refuses before
 * is answered without its body read; on a route that dispatches on the body, always (the contract is in it).
 */
export function inputNeed(action: RouteAction, limits: BodyLimits, reaches: (req: Request) => boolean): BodyNeed {
  return { wanted: (req) => bodyToRead(req) && (routeOf(req, action)?.dispatch === 'body' || reaches(req)), limits };
}

function build(req: Request, resolved: ResolvedContract, rawBody: Record<string, unknown>): Record<string, unknown> {
  const query = { ...(req.query as Record<string, unknown>) };
  let body = rawBody;
  if (resolved.dispatched) {
    delete query.messageType;
    const inner = rawBody.input;
    body = inner && typeof inner === 'object' && !Array.isArray(inner) ? (inner as Record<string, unknown>) : {};
  }
  // Path parameters: Express's (one endpoint per route) or the path table's (routing: table).
  const params = tableMatchOf(req)?.params ?? req.params ?? {};
  return buildInput({ body, query, params, schema: resolved.contract.inputSchema });
}
