import type { Request } from 'express';

/**
 * What our steps work out about one request, kept in one object: trace ids, the route and contract, the caller, the
 * body and the message input. Each step finds another's result without working it out again.
 * Each field belongs to the module that sets it and declares it there (`declare module '…/request/state'`):
 * trace.ts, body.ts, replay-body.ts, resolve-contract.ts, message-input.ts, user.ts, table-match.ts,
 * contract-rate-limit; read them through those modules.
 */
// Empty here on purpose: every owner adds its field by declaration merging, so this file knows none of their types.
// biome-ignore lint/suspicious/noEmptyInterface: filled by declaration merging (above); a type alias cannot be merged
export interface RequestState {}

/**
 * Beside the request, not on it: Express gives every request object a new prototype, so adding a property to one
 * builds a new hidden class, far dearer than a WeakMap entry (bench/REPORT.md), and reads miss V8's inline caches.
 */
const states = new WeakMap<Request, RequestState>();

export function requestState(req: Request): RequestState {
  let state = states.get(req);
  if (state === undefined) states.set(req, (state = {}));
  return state;
}
