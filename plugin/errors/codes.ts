/**
 * The one table of error codes: code → HTTP status and the `error` text of the error body.
 * Every error that leaves the gateway passes through here.
 */
export interface CodeInfo {
  status: number;
  error: string;
}

export const ERROR_CODES = Object.freeze({
  NO_AUTH_HEADER: { status: 401, error: 'Unauthorized' },
  INVALID_TOKEN: { status: 401, error: 'Unauthorized' },
  TOKEN_EXPIRED: { status: 401, error: 'Unauthorized' },
  INVALID_CREDENTIALS: { status: 401, error: 'Unauthorized' },
  UNAUTHORIZED: { status: 401, error: 'Unauthorized' },
  INSUFFICIENT_PERMISSIONS: { status: 403, error: 'Forbidden' },
  PERMISSION_DENIED: { status: 403, error: 'Forbidden' },
  POLICY_VIOLATION: { status: 403, error: 'Forbidden' },
  ACCESS_DENIED: { status: 403, error: 'Forbidden' },
  VALIDATION_ERROR: { status: 400, error: 'Validation failed' },
  MISSING_REQUIRED_FIELD: { status: 400, error: 'Validation failed' },
  INVALID_FORMAT: { status: 400, error: 'Validation failed' },
  INVALID_TYPE: { status: 400, error: 'Validation failed' },
  BAD_REQUEST: { status: 400, error: 'Bad Request' },
  NOT_FOUND: { status: 404, error: 'Not Found' },
  HANDLER_NOT_FOUND: { status: 404, error: 'Not Found' },
  METHOD_NOT_ALLOWED: { status: 405, error: 'Method Not Allowed' },
  REQUEST_TIMEOUT: { status: 408, error: 'Request Timeout' },
  RESOURCE_CONFLICT: { status: 409, error: 'Conflict' },
  RESOURCE_DELETED: { status: 410, error: 'Gone' },
  PAYLOAD_TOO_LARGE: { status: 413, error: 'Payload Too Large' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, error: 'Unsupported Media Type' },
  HEADERS_TOO_LARGE: { status: 431, error: 'Request Header Fields Too Large' },
  RATE_LIMIT_EXCEEDED: { status: 429, error: 'Too Many Requests' },
  INTERNAL_ERROR: { status: 500, error: 'Internal Server Error' },
  SERVICE_UNAVAILABLE: { status: 503, error: 'Service Unavailable' },
  TIMEOUT: { status: 504, error: 'Gateway Timeout' },
} as const satisfies Record<string, CodeInfo>);

/** A code of the table: APIs that take a code take this, so a misspelt code does not compile. */
export type ErrorCode = keyof typeof ERROR_CODES;

export function codeInfo(code: ErrorCode): CodeInfo {
  return ERROR_CODES[code];
}

/** Whether a code from outside (a service's reply) is in the table; an unknown one is answered as an internal error. */
export function isKnownCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && Object.hasOwn(ERROR_CODES, code);
}
