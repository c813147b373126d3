import type { Contract } from '../../plugin/contracts/types';
import { PROVIDERS } from './external-providers';

type OwnContract = Omit<Contract, 'targetService'>;

const token = { type: 'string', minLength: 1, maxLength: 8192 };
const authUser = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    userId: { type: 'string' },
    email: { type: 'string' },
    name: { type: 'string' },
    permissions: { type: 'array', items: { type: 'string' } },
    roles: { type: 'array', items: { type: 'string' } },
  },
  required: ['id', 'userId', 'email', 'name', 'permissions', 'roles'],
};
/** The authentication result: the tokens and the user they were issued to. */
const authResult = {
  type: 'object',
  properties: {
    success: { type: 'boolean' },
    accessToken: { type: 'string' },
    refreshToken: { type: 'string' },
    expiresIn: { type: 'integer' },
    tokenType: { type: 'string' },
    user: authUser,
  },
  required: ['success', 'accessToken', 'refreshToken', 'expiresIn', 'tokenType', 'user'],
};

/** Both path families are served: /api/auth/… and the short /api/… paths. */
export const authenticate: OwnContract = {
  messageType: 'AuthenticateCommand',
  http: { method: 'POST', paths: ['/api/auth/authenticate', '/api/login'] },
  public: true,
  requiredPermissions: [],
  inputSchema: {
    type: 'object',
    properties: {
      email: { type: 'string', format: 'email', maxLength: 254 },
      password: { type: 'string', minLength: 1, maxLength: 200, writeOnly: true },
    },
    required: ['email', 'password'],
  },
  outputSchema: authResult,
};

export const refreshToken: OwnContract = {
  messageType: 'RefreshTokenCommand',
  http: { method: 'POST', paths: ['/api/auth/refresh-token', '/api/refresh-token'] },
  // The refresh token in the body is the credential: an expired access token must not block a refresh.
  public: true,
  requiredPermissions: [],
  inputSchema: { type: 'object', properties: { refreshToken: token }, required: ['refreshToken'] },
  outputSchema: {
    type: 'object',
    properties: {
      success: { type: 'boolean' },
      accessToken: { type: 'string' },
      expiresIn: { type: 'integer' },
      tokenType: { type: 'string' },
    },
    required: ['success', 'accessToken', 'expiresIn', 'tokenType'],
  },
};

export const revokeToken: OwnContract = {
  messageType: 'RevokeTokenCommand',
  http: { method: 'POST', paths: ['/api/auth/revoke-token'] },
  requiredPermissions: [],
  inputSchema: { type: 'object', properties: { token }, required: ['token'] },
  outputSchema: {
    type: 'object',
    properties: { success: { type: 'boolean' }, revoked: { type: 'boolean' } },
    required: ['success', 'revoked'],
  },
};

export const logout: OwnContract = {
  messageType: 'LogoutCommand',
  http: { method: 'POST', paths: ['/api/logout'] },
  requiredPermissions: [],
  inputSchema: { type: 'object', properties: { userId: { type: 'string', minLength: 1, maxLength: 100 } } },
  outputSchema: {
    type: 'object',
    properties: { success: { type: 'boolean' }, revokedTokens: { type: 'integer' } },
    required: ['success', 'revokedTokens'],
  },
};

export const externalLogin: OwnContract = {
  messageType: 'ExternalLoginCommand',
  http: { method: 'POST', paths: ['/api/login/external'] },
  public: true,
  requiredPermissions: [],
  inputSchema: {
    type: 'object',
    properties: { provider: { type: 'string', enum: [...PROVIDERS] }, idToken: token },
    required: ['provider', 'idToken'],
  },
  outputSchema: authResult,
};

/**
 * Links (or creates) a user from an identity another trusted backend has already verified. It mints tokens for
 * any email, so it needs the `auth:external` permission.
 */
export const authenticateExternalUser: OwnContract = {
  messageType: 'AuthenticateExternalUserCommand',
  http: { method: 'POST', paths: ['/api/authenticate-external-user'] },
  requiredPermissions: ['auth:external'],
  inputSchema: {
    type: 'object',
    properties: {
      externalProvider: { type: 'string', minLength: 1, maxLength: 50 },
      externalUserId: { type: 'string', minLength: 1, maxLength: 200 },
      email: { type: 'string', format: 'email', maxLength: 254 },
      name: { type: 'string', minLength: 1, maxLength: 200 },
    },
    required: ['externalProvider', 'externalUserId', 'email'],
  },
  outputSchema: authResult,
};
