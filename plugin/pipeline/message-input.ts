import type { Request, Response } from 'express';
import { bodyAtHand, readBody, type BodyLimits } from '../request/body';
import { buildInput } from '../request/input';
import type { ResolvedContract } from './resolve-contract';
import { tableMatchOf } from '../routing/table-match';
import { requestState, type RequestState } from '../request/state';
import type { Maybe } from './maybe';

declare module '../request/state' {
  interface RequestState {
    /** The message's input, built once (schema-validation and contract-router both use it). */
    input?: Record<string, unknown>;
  }
}

/**
 * The input of the message, built once per request (schema validation and the router both use it):
 * body + path parameters + query string. On the generic routes the envelope is taken off first:
 * POST /api/actions { messageType, input }, GET /api/data?messageType=…&field=…. At once unless a body has to be read.
 */
export function messageInput(req: Request, res: Response, resolved: ResolvedContract, limits: BodyLimits): Maybe<Record<string, unknown>> {
  return inputAtHand(req, resolved) ?? inputOnceRead(req, res, resolved, limits);
}

/** The input when it needs no waiting (built before, or its body needs no reading); undefined otherwise. */
export function inputAtHand(req: Request, resolved: ResolvedContract): Record<string, unknown> | undefined {
  const state = requestState(req);
  const known = state.input;
  if (known) return known;
  const body = bodyAtHand(req);
  return body && remember(state, inputOf(req, resolved, body));
}

/** The input once the body is read. */
export async function inputOnceRead(req: Request, res: Response, resolved: ResolvedContract, limits: BodyLimits): Promise<Record<string, unknown>> {
  const atHand = inputAtHand(req, resolved);
  if (atHand) return atHand;
  const body = await readBody(req, res, limits);
  return remember(requestState(req), inputOf(req, resolved, body));
}

function remember(state: RequestState, input: Record<string, unknown>): Record<string, unknown> {
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
