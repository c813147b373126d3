import { ERROR_CODES, codeInfo, isKnownCode, type ErrorCode } from '../errors/codes';
import { GatewayError } from '../errors/gateway-error';
import { toErrorBody } from '../errors/error-body';

/**
 * The error body (with the extra fields by code) as a schema, and one reusable
 * response per status the gateway can answer with. Codes come from the one error table: a service's code that is
 * not in it reaches the client as INTERNAL_ERROR, so `code` is exactly that enum.
 */
export const ERROR_BODY_SCHEMA = {
  type: 'object',
  description: 'The error body of every error answer. Fields beyond the first six depend on the code.',
  properties: {
    error: { type: 'string', description: 'Category of the error, e.g. "Not Found", "Validation failed".' },
    message: { type: 'string', description: 'Human-readable text.' },
    code: { type: 'string', enum: Object.keys(ERROR_CODES), description: 'Machine-readable code, upper snake case.' },
    details: {
      type: 'object',
      additionalProperties: true,
      description: 'Optional context, e.g. field name → message.',
    },
    correlationId: { type: 'string', description: 'The X-Correlation-Id of the request.' },
    timestamp: { type: 'string', format: 'date-time' },
    requiredPermission: {
      type: 'string',
      description: 'INSUFFICIENT_PERMISSIONS: the first permission the caller lacks.',
    },
    required: { type: 'array', items: { type: 'string' }, description: 'PERMISSION_DENIED: permissions required.' },
    actual: { type: 'array', items: { type: 'string' }, description: 'PERMISSION_DENIED: permissions held.' },
    resourceType: { type: 'string', description: 'NOT_FOUND' },
    resourceId: { type: 'string', description: 'NOT_FOUND' },
    conflictingField: { type: 'string', description: 'RESOURCE_CONFLICT' },
    validationErrors: {
      type: 'array',
      description: 'VALIDATION_ERROR: one entry per failing field.',
      items: {
        type: 'object',
        properties: { field: { type: 'string' }, message: { type: 'string' } },
        required: ['field', 'message'],
      },
    },
    retryAfter: {
      type: 'integer',
      minimum: 0,
      description: 'RATE_LIMIT_EXCEEDED, and SERVICE_UNAVAILABLE on 503: seconds to wait.',
    },
    service: { type: 'string', description: 'SERVICE_UNAVAILABLE on 502: the upstream service.' },
    timeoutMs: { type: 'integer', minimum: 1, description: 'TIMEOUT: the upstream deadline.' },
  },
  // Every error answer carries these (toErrorBody; every caller gives it the request's correlation id).
  required: ['error', 'message', 'code', 'correlationId', 'timestamp'],
} as const;

/** Component names of the error responses, by status. */
const ERROR_RESPONSE_NAMES: Readonly<Record<number, string>> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  409: 'Conflict',
  413: 'PayloadTooLarge',
  415: 'UnsupportedMediaType',
  422: 'UnprocessableEntity',
  429: 'TooManyRequests',
  500: 'InternalError',
  502: 'BadGateway',
  503: 'ServiceUnavailable',
  504: 'GatewayTimeout',
};

/** The `default` response of generated routes: a service may answer with any code of the table. */
const OTHER_ERROR_RESPONSE = 'OtherError';

const WHEN: Readonly<Record<number, string>> = {
  400: "The input does not match the contract's input schema (or the request is malformed).",
  401: 'Authentication is missing or invalid; on a public route, the service refused the credentials the request carries.',
  403: 'The caller lacks a required permission, or a business rule refused the request.',
  404: 'The resource does not exist, or no contract handles this method and path (any more: its service withdrew it or stopped announcing it).',
  409: 'A unique field is taken, or the state conflicts.',
  413: 'The request body is larger than the gateway accepts.',
  415: 'The request body is not JSON.',
  422: 'The service refused the input by a business rule.',
  429: 'Too many requests (when rate limiting is configured); wait `retryAfter` seconds.',
  500: 'Unexpected error. The body never carries internals.',
  502: 'The upstream service went away while handling the request.',
  503: 'No instance of the service is reachable, the message bus is down, or the gateway answered for the service without sending the request (in maintenance, too many requests in progress, or failing: its circuit is open). In those three cases nothing was sent, so the request did not run. Retry after `Retry-After` seconds.',
  504: 'The upstream service did not answer in time.',
};

/** Codes of the error table (plus 422/502 which the table reaches through a status override). */
function codesFor(status: number): ErrorCode[] {
  const codes = Object.keys(ERROR_CODES)
    .filter(isKnownCode)
    .filter((code) => codeInfo(code).status === status);
  if (status === 422) codes.push('VALIDATION_ERROR');
  if (status === 502) codes.push('SERVICE_UNAVAILABLE');
  return codes;
}

export const TRACE_HEADERS = {
  'X-Correlation-Id': { $ref: '#/components/headers/X-Correlation-Id' },
  'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' },
} as const;

export const HEADER_COMPONENTS = {
  'X-Correlation-Id': {
    description: "The caller's X-Correlation-Id when it was safe to echo, else a new id.",
    schema: { type: 'string' },
  },
  'X-Request-Id': { description: 'A new id for this request.', schema: { type: 'string' } },
  'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer', minimum: 0 } },
  Location: {
    description: 'Where the created resource can be read (on create, when the service gives it).',
    schema: { type: 'string' },
  },
} as const;

/** The `components.responses` entries for every error status. */
export function errorResponseComponents(): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [statusText, name] of Object.entries(ERROR_RESPONSE_NAMES)) {
    const status = Number(statusText);
    const codes = codesFor(status);
    const headers: Record<string, unknown> = { ...TRACE_HEADERS };
    if (status === 503 || status === 429) headers['Retry-After'] = { $ref: '#/components/headers/Retry-After' };
    out[name] = {
      description: `${WHEN[status]} Codes: ${codes.join(', ')}.`,
      headers,
      content: {
        'application/json': {
          schema: { $ref: '#/components/schemas/ErrorBody' },
          example: exampleBody(codes[0], status),
        },
      },
    };
  }
  out[OTHER_ERROR_RESPONSE] = {
    description:
      "Another error the route's service answered with: any status and code of the error table (e.g. 403 ACCESS_DENIED, 410 RESOURCE_DELETED).",
    headers: { ...TRACE_HEADERS },
    content: {
      'application/json': {
        schema: { $ref: '#/components/schemas/ErrorBody' },
        example: exampleBody('RESOURCE_DELETED', 410, 'The resource was deleted.'),
      },
    },
  };
  return out;
}

/** `responses` entries referring to the shared error responses; `default` too when a service answers the route. */
export function errorResponses(
  statuses: readonly number[],
  opts: { serviceErrors?: boolean } = {},
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const status of [...new Set(statuses)].sort((a, b) => a - b)) {
    const name = ERROR_RESPONSE_NAMES[status];
    if (name) out[String(status)] = { $ref: `#/components/responses/${name}` };
  }
  if (opts.serviceErrors) out.default = { $ref: `#/components/responses/${OTHER_ERROR_RESPONSE}` };
  return out;
}

/** What the gateway really answers for the code, with fixed ids so the document does not change by itself. */
function exampleBody(code: ErrorCode, status: number, message = WHEN[status] ?? code): Record<string, unknown> {
  const { body } = toErrorBody(new GatewayError(code, message, { status }), '0b6f6c4e-4c7a-4f0e-9a53-3d2f1c9e8a71');
  return { ...body, timestamp: '2025-01-01T00:00:00.000Z' };
}
