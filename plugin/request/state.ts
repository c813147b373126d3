import type { Request } from 'express';

const STATE = Symbol('contracts.request');

/**
 * What our steps work out about one request, kept on one object under one key: trace ids, the route and contract,
 * the caller, the message input. The request object (a large one, with Express's and the host's own properties)
 * gains one property instead of one per concern, and each step finds another's result without a lookup of its own.
 * Each field belongs to the module that sets it and declares it there (`declare module '…/request/state'`):
 * trace.ts, resolve-contract.ts, message-input.ts, user.ts, table-routes.ts, contract-rate-limit; read them through
 * those modules.
 */
// Empty here on purpose: every owner adds its field by declaration merging, so this file knows none of their types.
export interface RequestState {}

export function requestState(req: Request): RequestState {
  const holder = req as unknown as Record<symbol, RequestState | undefined>;
  let state = holder[STATE];
  if (state === undefined) holder[STATE] = state = {};
  return state;
}
