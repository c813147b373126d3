import type { ServerResponse } from 'node:http';

/** The error code of each error answer, noted by sendError, read when the request is counted and logged. */
const codes = new WeakMap<ServerResponse, string>();

export function noteErrorCode(res: ServerResponse, code: string): void {
  codes.set(res, code);
}

export function errorCodeOf(res: ServerResponse): string | undefined {
  return codes.get(res);
}
