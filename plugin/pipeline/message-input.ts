import type { Request, Response } from 'express';
import { readBody, type BodyLimits } from '../request/body';
import { buildInput } from '../request/input';
import type { ResolvedContract } from './resolve-contract';
import { tableMatchOf } from '../routing/table-routes';
import { requestState, type RequestState } from '../request/state';
import { andThen, type Maybe } from './maybe';

declare module '../request/state' {
  interface RequestState {
    /** The message's input, built once (schema-validation and contract-router both use it). */
    input?: Record<string, unknown>;
  }
}

/**
 * The input of the message, built once per request (schema validation and the router both use it):
 * body + path parameters + query string. On the generic routes the envelope is taken off first:
 * POST /api/actions { messageType, input }, GET /api/data?messageType=…&field=….
 */
export function messageInput(req: Request, res: Response, resolved: ResolvedContract, limits: BodyLimits): Maybe<Record<string, unknown>> {
  const state = requestState(req);
  const known = state.input;
  if (known) return known;
  return andThen(readBody(req, res, limits), rememberInput, req, resolved, state);
}

function rememberInput(rawBody: Record<string, unknown>, req: Request, resolved: ResolvedContract, state: RequestState): Record<string, unknown> {
  const input = inputOf(req, resolved, rawBody);
  state.input = input;
  return input;
}

function inputOf(req: Request, resolved: ResolvedContract, rawBody: Record<string, unknown>): Record<string, unknown> {
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
