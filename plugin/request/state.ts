import type { Request } from 'express';

const STATE = Symbol('contracts.request');

/**
 * What our steps work out about one request, kept on one object under one key: trace ids, the route and contract,
 * the caller, the message input. The request object (a large one, with Express's and the host's own properties)
 * gains one property instead of one per concern, and each step finds another's result without a lookup of its own.
 * Each field belongs to the module that sets it (trace.ts, resolve-contract.ts, user.ts, …); read them through
 * those modules.
 */
export function requestState(req: Request): Record<string, unknown> {
  const holder = req as unknown as Record<symbol, Record<string, unknown> | undefined>;
  let state = holder[STATE];
  if (state === undefined) holder[STATE] = state = {};
  return state;
}
