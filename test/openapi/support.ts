import { parse } from 'yaml';
import type { Contract } from '../../plugin/contracts/types';
import * as users from '../../examples/users-service/contracts';
import * as auth from '../../examples/auth-service/contracts';

/** The reference services' contracts as the gateway discovers them. */
export function referenceContracts(): Contract[] {
  const out: Contract[] = [];
  for (const [mod, targetService] of [
    [users, 'users-service'],
    [auth, 'auth-service'],
  ] as const) {
    for (const value of Object.values(mod)) {
      if (value && typeof value === 'object' && 'messageType' in value)
        out.push({ ...(value as Omit<Contract, 'targetService'>), targetService });
    }
  }
  return out;
}

/**
 * Validates a document with @seriousme/openapi-schema-validator (OpenAPI 3.1 schema plus $ref resolution). The
 * package is ESM only, hence the dynamic import. The document is copied: resolveRefs rewrites what it is given.
 */
export async function validateOpenApi(
  document: unknown,
): Promise<{ valid: boolean; errors?: unknown; version?: string }> {
  const { Validator } = await import('@seriousme/openapi-schema-validator');
  const validator = new Validator();
  const result = await validator.validate(JSON.parse(JSON.stringify(document)));
  if (result.valid) validator.resolveRefs();
  return { valid: result.valid, errors: result.errors, version: validator.version };
}

/** Contracts that exercise the corners: draft-07 local refs, a root $id, a ':' in the name, generic routes, a public action. */
export function trickyContracts(): Contract[] {
  return [
    {
      messageType: 'ResetPasswordCommand',
      targetService: 'auth-service',
      inputSchema: {
        $schema: 'http://json-schema.org/draft-07/schema#',
        $id: 'urn:reset',
        type: 'object',
        properties: { email: { $ref: '#/definitions/email' } },
        required: ['email'],
        definitions: { email: { type: 'string', format: 'email' } },
      },
      outputSchema: {
        $ref: '#/$defs/done',
        $defs: { done: { type: 'object', properties: { sent: { type: 'boolean' } } } },
      },
      requiredPermissions: [],
      public: true,
    },
    {
      messageType: 'ReportQuery',
      targetService: 'reports',
      inputSchema: { type: 'object', properties: { from: { type: 'string', format: 'date' } } },
      outputSchema: { type: 'object' },
      requiredPermissions: ['reports:read'],
    },
    {
      messageType: 'StatsQuery',
      targetService: 'reports',
      inputSchema: { type: 'object' },
      outputSchema: {},
      requiredPermissions: ['stats:read'],
    },
    {
      messageType: 'orders:ArchiveCommand',
      targetService: 'orders',
      inputSchema: { type: 'object', properties: { const: { type: 'string' } } },
      outputSchema: {},
      requiredPermissions: ['orders:archive'],
    },
    {
      messageType: 'GetFileQuery',
      targetService: 'files',
      http: { method: 'GET', paths: ['/api/files/:fileId(\\d+)'] },
      inputSchema: { type: 'object', properties: { fileId: { type: 'integer' } }, required: ['fileId'] },
      outputSchema: {},
      requiredPermissions: ['files:read'],
    },
  ];
}

/** Hand-written pipelines as an operator writes them, beside a generated one. */
export const HAND_WRITTEN_CONFIG = parse(`
apiEndpoints:
  signup:
    host: '*'
    paths: ['/signup', '/register']
    methods: POST
  profile:
    paths: /me/:userId
    methods: [GET]
  everything:
    paths: /people
  legacy:
    paths: '/legacy/*'
  contracts-get-api-users:
    paths: ['/api/users']
    methods: [GET]
pipelines:
  signup:
    apiEndpoints: [signup]
    policies:
      - jwt-dev-auth:
      - permission:
          - action: { required: ['users:create', 'users:invite'] }
      - schema-validation:
          - action:
              schema: { type: object, properties: { email: { type: string, format: email } }, required: [email], additionalProperties: false }
      - contract-router:
          - action: { messageType: CreateUserCommand }
  profile:
    apiEndpoints: [profile]
    policies:
      - jwt-dev-auth:
          - action: { public: true }
      - contract-router:
          - action: { messageType: GetUserQuery, public: true }
  people:
    apiEndpoints: [everything]
    policies:
      - contract-router:
          - action: { messageType: ListUsersQuery }
  legacy:
    apiEndpoints: [legacy]
    policies:
      - contract-router:
          - action: { messageType: ListUsersQuery }
  proxied:
    apiEndpoints: [signup]
    policies:
      - contract-router:
          - action: { messageType: CreateUserCommand }
      - proxy:
          - action: { serviceEndpoint: backend }
  contracts-routes:
    apiEndpoints: [contracts-get-api-users]
    policies:
      - contract-router:
          - action: {}
`);
