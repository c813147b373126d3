import { errorResponses, TRACE_HEADERS } from './error-responses';
import { DEFAULT_SECURITY, PUBLIC_SECURITY } from './security';

export const OPERATIONS_TAG = 'operations';

const BUS = {
  type: 'object',
  properties: {
    kind: { type: 'string', enum: ['amqp', 'inprocess'] },
    state: { type: 'string', enum: ['connecting', 'up', 'blocked', 'down', 'closed'] },
    reason: { type: 'string', description: 'While blocked: the alarm RabbitMQ names (e.g. low on memory).' },
    refused: {
      type: 'array',
      items: { type: 'string' },
      description:
        "The gateway's channels the broker refuses to set up (a reply consumer at the vhost's queue limit), while it refuses any.",
    },
  },
  required: ['kind', 'state'],
};

const HEALTH_FIELDS = {
  bus: { $ref: '#/components/schemas/BusStatus' },
  rateLimitStore: {
    type: 'object',
    description: 'The rate-limit counter store: degraded while it fails or does not answer in time.',
    properties: {
      state: { type: 'string', enum: ['ok', 'degraded'] },
      since: { type: 'string', format: 'date-time', description: 'When it became degraded.' },
    },
    required: ['state'],
  },
  announcements: {
    type: 'object',
    description:
      "Whether the gateway hears the services' announcements: not heard while the broker refuses its listener.",
    properties: {
      state: { type: 'string', enum: ['heard', 'not heard'] },
      reason: { type: 'string', description: "While not heard: why, in the gateway's words." },
    },
    required: ['state'],
  },
  contracts: { type: 'integer', minimum: 0, description: 'Contracts discovered now.' },
  services: { type: 'integer', minimum: 0, description: 'Services with at least one live instance.' },
  uptimeSeconds: { type: 'integer', minimum: 0 },
};

const INSTANCE = {
  type: 'object',
  properties: {
    service: { type: 'string' },
    instanceId: { type: 'string' },
    lastSeen: { type: 'string', format: 'date-time', description: 'Its last announcement.' },
    leaseExpiresAt: { type: 'string', format: 'date-time', description: 'Dropped then unless it announces again.' },
  },
  required: ['service', 'instanceId', 'lastSeen', 'leaseExpiresAt'],
};

/** A contract's own JSON Schema, as announced: any object (typed clients get a map, not an empty type). */
const JSON_SCHEMA = {
  type: 'object',
  additionalProperties: true,
  description: 'A JSON Schema, as the service announced it.',
};

/** Schemas of the operations endpoints' bodies (docs/operations.md "Operations endpoints"). */
export const OPERATIONS_SCHEMAS = {
  BusStatus: BUS,
  Health: {
    type: 'object',
    properties: {
      status: {
        type: 'string',
        enum: ['ok', 'degraded'],
        description:
          'degraded: the bus is up and the rate-limit store is not, or the announcements are not heard (the contracts known are still served).',
      },
      ...HEALTH_FIELDS,
    },
    required: ['status', 'bus', 'rateLimitStore', 'announcements', 'contracts', 'services', 'uptimeSeconds'],
  },
  HealthUnavailable: {
    description: 'The error body, plus the health fields.',
    allOf: [
      { $ref: '#/components/schemas/ErrorBody' },
      {
        type: 'object',
        properties: { status: { const: 'unavailable' }, ...HEALTH_FIELDS },
        required: ['status', 'bus', 'rateLimitStore', 'announcements', 'contracts', 'services', 'uptimeSeconds'],
      },
    ],
  },
  ServiceInstance: INSTANCE,
  RegistryConflict: {
    type: 'object',
    description: 'A message type that more than one service announces; the first service keeps it.',
    properties: { messageType: { type: 'string' }, services: { type: 'array', items: { type: 'string' } } },
    required: ['messageType', 'services'],
  },
  RouteConflict: {
    type: 'object',
    description:
      'A route that two contracts would share (`duplicate`: the first listed keeps it) or that belongs to the gateway (`reserved`).',
    properties: {
      method: { type: 'string', enum: ['GET', 'POST', 'PUT', 'DELETE', 'PATCH'] },
      path: { type: 'string' },
      whenQuery: { type: 'string' },
      reason: { type: 'string', enum: ['duplicate', 'reserved'] },
      messageTypes: { type: 'array', items: { type: 'string' } },
      targetServices: { type: 'array', items: { type: 'string' }, description: 'Parallel to messageTypes.' },
    },
    required: ['method', 'path', 'reason', 'messageTypes', 'targetServices'],
  },
  DiscoveredContract: {
    type: 'object',
    properties: {
      messageType: { type: 'string' },
      targetService: { type: 'string' },
      public: { type: 'boolean' },
      requiredPermissions: { type: 'array', items: { type: 'string' } },
      timeoutMs: { type: 'number', description: 'The deadline the contract asks for.' },
      effectiveTimeoutMs: {
        type: 'integer',
        description: 'The deadline the gateway keeps: timeoutMs (or requestTimeoutMs), at most maxRequestTimeoutMs.',
      },
      timeoutClamped: {
        type: 'boolean',
        description: 'Present when timeoutMs asks for more than maxRequestTimeoutMs.',
      },
      rateLimit: {
        type: 'object',
        properties: { max: { type: 'integer', minimum: 1 }, windowMs: { type: 'integer', minimum: 1000 } },
        required: ['max'],
      },
      http: {
        type: 'object',
        properties: {
          method: { type: 'string', enum: ['GET', 'POST', 'PUT', 'DELETE', 'PATCH'] },
          paths: { type: 'array', items: { type: 'string' } },
        },
        required: ['method', 'paths'],
      },
      inputSchema: JSON_SCHEMA,
      outputSchema: JSON_SCHEMA,
      endpoints: {
        type: 'array',
        description: 'The generated routes that reach this contract (a contract that lost a route conflict has fewer).',
        items: {
          type: 'object',
          properties: {
            method: { type: 'string' },
            path: { type: 'string', description: 'Express style, e.g. /api/users/:userId.' },
            successStatus: { type: 'integer' },
            whenQuery: {
              type: 'string',
              description: 'Reached on this path only when this query parameter is present.',
            },
            generic: {
              type: 'boolean',
              description: 'A generic route (/api/actions, /api/data) that names the message type in the request.',
            },
          },
          required: ['method', 'path', 'successStatus'],
        },
      },
      instances: {
        type: 'array',
        items: { $ref: '#/components/schemas/ServiceInstance' },
        description: 'Instances announcing this message type.',
      },
    },
    required: [
      'messageType',
      'targetService',
      'public',
      'effectiveTimeoutMs',
      'requiredPermissions',
      'inputSchema',
      'outputSchema',
      'endpoints',
      'instances',
    ],
  },
  DiscoveryListing: {
    type: 'object',
    properties: {
      count: { type: 'integer', minimum: 0 },
      services: { type: 'array', items: { type: 'string' } },
      contracts: { type: 'array', items: { $ref: '#/components/schemas/DiscoveredContract' } },
      conflicts: {
        type: 'object',
        properties: {
          messageTypes: { type: 'array', items: { $ref: '#/components/schemas/RegistryConflict' } },
          routes: { type: 'array', items: { $ref: '#/components/schemas/RouteConflict' } },
          refused: {
            type: 'array',
            description:
              'Contracts announced but not served: held by another service, or against the pinned ownership rules.',
            items: {
              type: 'object',
              properties: {
                service: { type: 'string' },
                messageType: { type: 'string' },
                reason: { type: 'string' },
                holder: { type: 'string' },
              },
            },
          },
        },
        required: ['messageTypes', 'routes'],
      },
    },
    required: ['count', 'services', 'contracts', 'conflicts'],
  },
  DebugSnapshot: {
    type: 'object',
    properties: {
      now: { type: 'string', format: 'date-time' },
      bus: { $ref: '#/components/schemas/BusStatus' },
      entries: {
        type: 'array',
        description: 'One per cached contract.',
        items: {
          type: 'object',
          properties: {
            messageType: { type: 'string' },
            targetService: { type: 'string' },
            instanceIds: { type: 'array', items: { type: 'string' } },
            ageMs: {
              type: ['integer', 'null'],
              description: 'Since the freshest announcement carrying it; null when no instance does.',
            },
            leaseRemainingMs: {
              type: ['integer', 'null'],
              description: 'Until the last lease carrying it runs out; null when no instance carries it.',
            },
          },
          required: ['messageType', 'targetService', 'instanceIds', 'ageMs', 'leaseRemainingMs'],
        },
      },
      instances: {
        type: 'array',
        items: {
          allOf: [
            { $ref: '#/components/schemas/ServiceInstance' },
            {
              type: 'object',
              properties: {
                messageTypes: { type: 'array', items: { type: 'string' } },
                ageMs: { type: 'integer' },
                leaseRemainingMs: { type: 'integer' },
              },
              required: ['messageTypes', 'ageMs', 'leaseRemainingMs'],
            },
          ],
        },
      },
      conflicts: { type: 'array', items: { $ref: '#/components/schemas/RegistryConflict' } },
      openapi: {
        type: 'object',
        description: 'The OpenAPI document now served (absent until it is first built).',
        properties: { version: { type: 'string' }, generatedAt: { type: 'string', format: 'date-time' } },
        required: ['version', 'generatedAt'],
      },
    },
    required: ['now', 'bus', 'entries', 'instances', 'conflicts'],
  },
} as const;

function json(description: string, schemaName: string): Record<string, unknown> {
  return {
    description,
    headers: { ...TRACE_HEADERS },
    content: { 'application/json': { schema: { $ref: `#/components/schemas/${schemaName}` } } },
  };
}

/** The gateway's own endpoints. /debug/contracts is listed only when it is enabled. */
export function operationsPaths(opts: { debugEndpoints: boolean }): Record<string, unknown> {
  const paths: Record<string, unknown> = {
    '/health': {
      get: {
        tags: [OPERATIONS_TAG],
        operationId: 'health',
        summary: 'Health check',
        description: '200 while the message bus is connected; 503 (error body plus the same fields) while it is not.',
        security: PUBLIC_SECURITY,
        responses: {
          '200': json('The gateway and its bus are up.', 'Health'),
          '503': {
            description: 'The message bus is down or still connecting.',
            headers: { ...TRACE_HEADERS, 'Retry-After': { $ref: '#/components/headers/Retry-After' } },
            content: { 'application/json': { schema: { $ref: '#/components/schemas/HealthUnavailable' } } },
          },
        },
      },
    },
    '/api/discovery/contracts': {
      get: {
        tags: [OPERATIONS_TAG],
        operationId: 'listDiscoveredContracts',
        summary: 'Discovered contracts with their generated endpoints',
        description:
          'Every contract the gateway serves now, with its routes and the service instances announcing it. Any authenticated caller; no particular permission.',
        security: DEFAULT_SECURITY,
        'x-required-permissions': [],
        responses: { '200': json('The listing.', 'DiscoveryListing'), ...errorResponses([401, 500, 503]) },
      },
    },
    '/api-docs': {
      get: {
        tags: [OPERATIONS_TAG],
        operationId: 'apiDocsPage',
        summary: 'This documentation, as an interactive page (Swagger UI)',
        security: PUBLIC_SECURITY,
        responses: {
          '200': { description: 'An HTML page.', content: { 'text/html': { schema: { type: 'string' } } } },
        },
      },
    },
    '/api-docs/openapi.json': {
      get: {
        tags: [OPERATIONS_TAG],
        operationId: 'openApiDocument',
        summary: 'This document (OpenAPI 3.1), regenerated whenever the discovered contracts change',
        security: PUBLIC_SECURITY,
        responses: {
          '200': {
            description: 'The document. Carries an ETag; If-None-Match gets 304.',
            headers: { ...TRACE_HEADERS },
            content: { 'application/json': { schema: { type: 'object', additionalProperties: true } } },
          },
          '304': { description: 'Unchanged since the ETag given.', headers: { ...TRACE_HEADERS } },
          ...errorResponses([503]),
        },
      },
    },
  };
  if (opts.debugEndpoints) {
    paths['/debug/contracts'] = {
      get: {
        tags: [OPERATIONS_TAG],
        operationId: 'debugContracts',
        summary: 'The contract cache (debug)',
        description:
          'Served only with the plugin setting `debugEndpoints: true` (or DEBUG_ENDPOINTS=true); 404 otherwise. No authentication: enable it only where the network is trusted.',
        security: PUBLIC_SECURITY,
        responses: { '200': json('The cache.', 'DebugSnapshot') },
      },
    };
  }
  return paths;
}
