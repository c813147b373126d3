import { expect } from 'chai';
import { buildEndpointSpecs, comparePaths, endpointName } from '../../plugin/contracts/endpoint-specs';
import type { Contract } from '../../plugin/contracts/types';

function contract(
  messageType: string,
  targetService = 'users',
  extra: Partial<Contract> = {},
  properties: Record<string, unknown> = {},
): Contract {
  return {
    messageType,
    targetService,
    inputSchema: { properties },
    outputSchema: {},
    requiredPermissions: [],
    ...extra,
  };
}

const userContracts: Contract[] = [
  contract('CreateUserCommand'),
  contract('GetUserQuery', 'users', {}, { userId: {} }),
  contract('ListUsersQuery'),
  contract('UpdateUserCommand', 'users', {}, { userId: {} }),
  contract('DeleteUserCommand', 'users', {}, { userId: {} }),
  contract('GetCurrentUserQuery', 'users', { http: { method: 'GET', paths: ['/api/users/me'] } }),
  contract('ResetPasswordCommand', 'auth'),
  contract('ChangeEmailCommand', 'users'),
  contract('StatsQuery', 'reports'),
  contract('HealthQuery', 'reports'),
];

/** Every permutation of a small list is too many; rotations and a reversal cover order dependence. */
function orderings<T>(items: T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += 1) out.push([...items.slice(i), ...items.slice(0, i)]);
  out.push([...items].reverse());
  return out;
}

describe('buildEndpointSpecs', () => {
  it('groups routes into one endpoint per method and path, ordered for Express', () => {
    const { endpoints, conflicts } = buildEndpointSpecs(userContracts);
    expect(conflicts).to.deep.equal([]);
    expect(endpoints.map((e) => `${e.method} ${e.path}`)).to.deep.equal([
      'POST /api/actions',
      'POST /api/change-email',
      'GET /api/data',
      'POST /api/reset-password',
      'GET /api/users',
      'POST /api/users',
      'GET /api/users/me',
      'DELETE /api/users/:userId',
      'GET /api/users/:userId',
      'PUT /api/users/:userId',
    ]);
  });

  it('puts the get-by-query-string as a variant of the list endpoint', () => {
    const list = buildEndpointSpecs(userContracts).endpoints.find((e) => e.method === 'GET' && e.path === '/api/users');
    expect(list).to.deep.equal({
      name: 'contracts-get-api-users',
      method: 'GET',
      path: '/api/users',
      messageType: 'ListUsersQuery',
      kind: 'list',
      variants: [{ whenQuery: 'userId', messageType: 'GetUserQuery', kind: 'get' }],
      messageTypes: ['GetUserQuery', 'ListUsersQuery'],
    });
  });

  it('serves a variant alone without a default when there is no list query', () => {
    const { endpoints } = buildEndpointSpecs([contract('GetUserQuery', 'users', {}, { userId: {} })]);
    const collection = endpoints.find((e) => e.path === '/api/users');
    expect(collection?.messageType).to.equal(undefined);
    expect(collection?.variants).to.deep.equal([{ whenQuery: 'userId', messageType: 'GetUserQuery', kind: 'get' }]);
  });

  it('makes one dispatch endpoint per generic route with its allowed message types', () => {
    const { endpoints } = buildEndpointSpecs(userContracts);
    const actions = endpoints.find((e) => e.path === '/api/actions');
    const data = endpoints.find((e) => e.path === '/api/data');
    expect(actions).to.deep.equal({
      name: 'contracts-post-api-actions',
      method: 'POST',
      path: '/api/actions',
      variants: [],
      dispatch: 'body',
      messageTypes: ['ChangeEmailCommand', 'ResetPasswordCommand'],
    });
    expect(data?.dispatch).to.equal('query');
    expect(data?.messageTypes).to.deep.equal(['HealthQuery', 'StatsQuery']);
  });

  it('names endpoints deterministically, as valid keys with the prefix', () => {
    const { endpoints } = buildEndpointSpecs(userContracts, { prefix: 'gen-' });
    expect(endpoints.find((e) => e.path === '/api/users/:userId' && e.method === 'GET')?.name).to.equal(
      'gen-get-api-users-userid',
    );
    for (const e of endpoints) expect(e.name).to.match(/^gen-[a-z0-9-]+$/);
    expect(endpointName('contracts-', 'GET', '/api/users/:userId')).to.equal('contracts-get-api-users-userid');
  });

  it('keeps names unique when two paths slug alike', () => {
    const { endpoints } = buildEndpointSpecs([
      contract('AQuery', 's', { http: { method: 'GET', paths: ['/api/x/:y'] } }),
      contract('BQuery', 's', { http: { method: 'GET', paths: ['/api/x/y'] } }),
    ]);
    expect(endpoints.map((e) => [e.path, e.name])).to.deep.equal([
      ['/api/x/y', 'contracts-get-api-x-y'],
      ['/api/x/:y', 'contracts-get-api-x-y-2'],
    ]);
  });

  it('reports two contracts on one route with the first by message type as winner', () => {
    const { endpoints, conflicts } = buildEndpointSpecs([
      contract('ListUsersQuery', 'users-b'),
      contract('ListUserQuery', 'users-a'),
    ]);
    expect(conflicts).to.deep.equal([
      {
        method: 'GET',
        path: '/api/users',
        reason: 'duplicate',
        messageTypes: ['ListUserQuery', 'ListUsersQuery'],
        targetServices: ['users-a', 'users-b'],
      },
    ]);
    expect(endpoints).to.have.length(1);
    expect(endpoints[0]?.messageType).to.equal('ListUserQuery');
  });

  it('reports a conflict between two variants with the same query parameter', () => {
    const { conflicts } = buildEndpointSpecs([
      contract('GetUserQuery', 'a', {}, { userId: {} }),
      contract('GetUsersQuery', 'b', {}, { userId: {} }),
    ]);
    expect(conflicts.map((c) => [c.method, c.path, c.whenQuery, c.messageTypes])).to.deep.equal([
      ['GET', '/api/users', 'userId', ['GetUserQuery', 'GetUsersQuery']],
      ['GET', '/api/users/:userId', undefined, ['GetUserQuery', 'GetUsersQuery']],
    ]);
  });

  it('keeps a generic dispatch route and reports a contract route landing on it', () => {
    const { endpoints, conflicts } = buildEndpointSpecs([contract('ListDataQuery', 'd'), contract('StatsQuery', 'r')]);
    expect(conflicts).to.deep.equal([
      { method: 'GET', path: '/api/data', reason: 'reserved', messageTypes: ['ListDataQuery'], targetServices: ['d'] },
    ]);
    expect(endpoints).to.have.length(1);
    expect(endpoints[0]?.dispatch).to.equal('query');
    expect(endpoints[0]?.messageTypes).to.deep.equal(['StatsQuery']);
  });

  it('does not report an override that lists one path twice', () => {
    const { conflicts, endpoints } = buildEndpointSpecs([
      contract('LoginCommand', 'auth', { http: { method: 'POST', paths: ['/api/login', '/api/login'] } }),
    ]);
    expect(conflicts).to.deep.equal([]);
    expect(endpoints.map((e) => e.path)).to.deep.equal(['/api/login']);
  });

  it('gives identical output for the same contracts in any order', () => {
    const withConflicts = [...userContracts, contract('ListUserQuery', 'other'), contract('CreateUserCommand', 'zeta')];
    const expected = JSON.stringify(buildEndpointSpecs(withConflicts));
    for (const ordering of orderings(withConflicts)) {
      expect(JSON.stringify(buildEndpointSpecs(ordering))).to.equal(expected);
    }
  });

  it('returns no endpoints for no contracts', () => {
    expect(buildEndpointSpecs([])).to.deep.equal({ endpoints: [], conflicts: [] });
  });
});

describe('comparePaths', () => {
  it('puts static segments before parameters, and parameters before wildcards, at the same depth', () => {
    const paths = [
      '/api/users/:userId',
      '/api/users/me',
      '/api/:kind/x',
      '/api/users',
      '/api/users/:userId/permissions',
      '/api/users/*',
    ];
    expect([...paths].sort(comparePaths)).to.deep.equal([
      '/api/users',
      '/api/users/me',
      '/api/users/:userId',
      '/api/users/:userId/permissions',
      '/api/users/*',
      '/api/:kind/x',
    ]);
  });
});
