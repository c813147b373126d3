import type { ServerResponse } from 'node:http';
import type { ErrorCode } from '../errors/codes';

/** The error code of each error answer, noted by sendError, read when the request is counted and logged. */
const codes = new WeakMap<ServerResponse, ErrorCode>();

export function noteErrorCode(res: ServerResponse, code: ErrorCode): void {
  codes.set(res, code);
}

export function errorCodeOf(res: ServerResponse): ErrorCode | undefined {
  return codes.get(res);
}
