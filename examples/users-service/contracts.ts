import type { Contract } from '../../plugin/contracts/types';

type OwnContract = Omit<Contract, 'targetService'>;

const email = { type: 'string', format: 'email', maxLength: 254 };
const role = { type: 'string', enum: ['user', 'admin'] };
/** On create and update: giving a role other than `user`, or changing one, needs admin:all (handlers.ts). */
const assignedRole = {
  ...role,
  description:
    'a role other than user (on create), or a change of role (on update), needs admin:all: the admin role carries admin:all',
};
const name = { type: 'string', minLength: 1, maxLength: 200 };
const userId = { type: 'string', minLength: 1, maxLength: 100 };

/** A user as the service returns it; `password` is write-only and never part of it. */
const userOutput = {
  type: 'object',
  properties: {
    userId,
    id: userId,
    email,
    firstName: name,
    lastName: name,
    name,
    role,
    profile: { type: 'object', properties: { firstName: name, lastName: name } },
    permissions: { type: 'array', items: { type: 'string' } },
    createdAt: { type: 'string', format: 'date-time' },
    updatedAt: { type: 'string', format: 'date-time' },
  },
  required: ['userId', 'id', 'email', 'role', 'permissions', 'createdAt', 'updatedAt'],
};

/** The users API as contracts. Both create variants are accepted: firstName/lastName, or name/role/password/profile. */
export const createUser: OwnContract = {
  messageType: 'CreateUserCommand',
  requiredPermissions: ['users:create'],
  inputSchema: {
    type: 'object',
    properties: {
      email,
      firstName: name,
      lastName: name,
      name,
      role: assignedRole,
      password: { type: 'string', minLength: 8, maxLength: 200, writeOnly: true },
      profile: {
        type: 'object',
        properties: { firstName: { type: 'string', minLength: 1, maxLength: 200 }, lastName: name },
      },
    },
    required: ['email'],
  },
  outputSchema: {
    ...userOutput,
    properties: { ...userOutput.properties, success: { type: 'boolean' } },
    required: [...userOutput.required, 'success'],
  },
};

export const getUser: OwnContract = {
  messageType: 'GetUserQuery',
  requiredPermissions: ['users:read'],
  inputSchema: {
    type: 'object',
    properties: {
      userId,
      fields: { type: 'string', description: 'comma-separated field names to return (userId and id always are)' },
    },
    required: ['userId'],
  },
  // ?fields= chooses the others: the identifiers are all a selection always has.
  outputSchema: { ...userOutput, required: ['userId', 'id'] },
};

export const updateUser: OwnContract = {
  messageType: 'UpdateUserCommand',
  requiredPermissions: ['users:update'],
  inputSchema: {
    type: 'object',
    properties: { userId, email, firstName: name, lastName: name, name, role: assignedRole },
    required: ['userId'],
  },
  outputSchema: userOutput,
};

export const deleteUser: OwnContract = {
  messageType: 'DeleteUserCommand',
  requiredPermissions: ['users:delete'],
  inputSchema: { type: 'object', properties: { userId }, required: ['userId'] },
  outputSchema: {},
};

export const listUsers: OwnContract = {
  messageType: 'ListUsersQuery',
  requiredPermissions: ['users:read'],
  inputSchema: {
    type: 'object',
    properties: {
      page: { type: 'integer', minimum: 1, default: 1 },
      pageSize: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
      limit: { type: 'integer', minimum: 1, maximum: 100 },
      offset: { type: 'integer', minimum: 0 },
      role,
      search: { type: 'string', maxLength: 200 },
      sort: { type: 'string', enum: ['email', 'name', 'firstName', 'lastName', 'role', 'createdAt', 'updatedAt'] },
      order: { type: 'string', enum: ['asc', 'desc'] },
    },
  },
  outputSchema: {
    type: 'object',
    properties: {
      users: { type: 'array', items: userOutput },
      page: { type: 'integer' },
      pageSize: { type: 'integer' },
      totalCount: { type: 'integer' },
      totalPages: { type: 'integer' },
      hasNext: { type: 'boolean' },
      hasPrevious: { type: 'boolean' },
    },
    required: ['users', 'page', 'pageSize', 'totalCount', 'totalPages', 'hasNext', 'hasPrevious'],
  },
};

const permission = { type: 'string', pattern: '^[A-Za-z0-9_-]+:[A-Za-z0-9_*-]+$', maxLength: 100 };

/** GET /api/users/:userId/permissions — what an operator reads when a caller gets 403. */
export const getUserPermissions: OwnContract = {
  messageType: 'GetUserPermissionsQuery',
  http: { method: 'GET', paths: ['/api/users/:userId/permissions'] },
  requiredPermissions: ['users:read'],
  inputSchema: { type: 'object', properties: { userId }, required: ['userId'] },
  outputSchema: {
    type: 'object',
    properties: {
      userId,
      permissions: { type: 'array', items: permission },
      roles: { type: 'array', items: { type: 'string' } },
    },
    required: ['userId', 'permissions', 'roles'],
  },
};

/** POST /api/users/:userId/permissions — administrators only; the permission is in the user's next access token. */
export const grantUserPermission: OwnContract = {
  messageType: 'GrantUserPermissionCommand',
  http: { method: 'POST', paths: ['/api/users/:userId/permissions'] },
  requiredPermissions: ['admin:all'],
  inputSchema: { type: 'object', properties: { userId, permission }, required: ['userId', 'permission'] },
  outputSchema: {
    type: 'object',
    properties: { userId, permission, permissions: { type: 'array', items: permission } },
    required: ['userId', 'permission', 'permissions'],
  },
};
