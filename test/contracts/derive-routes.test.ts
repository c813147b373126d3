import { expect } from 'chai';
import { classify, deriveRoutes } from '../../plugin/contracts/derive-routes';
import type { Contract } from '../../plugin/contracts/types';

function contract(
  messageType: string,
  properties: Record<string, unknown> = {},
  extra: Partial<Contract> = {},
): Contract {
  return {
    messageType,
    targetService: 'svc',
    inputSchema: { type: 'object', properties },
    outputSchema: {},
    requiredPermissions: [],
    ...extra,
  };
}

/** `METHOD path[?whenQuery][ dispatch]` — compact to compare whole route lists. */
function routes(c: Contract): string[] {
  return deriveRoutes(c).map(
    (r) =>
      `${r.method} ${r.path}${r.whenQuery ? `?${r.whenQuery}` : ''}${r.dispatch ? ` dispatch=${r.dispatch}` : ''} ${r.kind}`,
  );
}

describe('deriveRoutes', () => {
  describe('the naming table', () => {
    it('Create<Resource>Command → POST /api/<resources>', () => {
      expect(routes(contract('CreateUserCommand'))).to.deep.equal(['POST /api/users create']);
    });

    it('Update<Resource>Command → PUT /api/<resources>/:id', () => {
      expect(routes(contract('UpdateUserCommand'))).to.deep.equal(['PUT /api/users/:id update']);
    });

    it('Delete<Resource>Command → DELETE /api/<resources>/:id', () => {
      expect(routes(contract('DeleteUserCommand'))).to.deep.equal(['DELETE /api/users/:id delete']);
    });

    it('Get<Resource>Query → GET /api/<resources>/:id and GET /api/<resources>?<id>', () => {
      expect(routes(contract('GetUserQuery'))).to.deep.equal(['GET /api/users/:id get', 'GET /api/users?id get']);
    });

    it('List<Resources>Query → GET /api/<resources>', () => {
      expect(routes(contract('ListUsersQuery'))).to.deep.equal(['GET /api/users list']);
    });

    it('other <Name>Command → POST /api/<kebab-name> and the generic POST /api/actions', () => {
      expect(routes(contract('ResetPasswordCommand'))).to.deep.equal([
        'POST /api/reset-password command',
        'POST /api/actions dispatch=body command',
      ]);
    });

    it('other <Name>Query → only the generic GET /api/data', () => {
      expect(routes(contract('SearchEverythingQuery'))).to.deep.equal(['GET /api/data dispatch=query query']);
    });
  });

  describe('resource names', () => {
    const cases: Array<[string, string]> = [
      ['CreateOrderItemCommand', '/api/order-items'],
      ['CreateCategoryCommand', '/api/categories'],
      ['CreateAddressCommand', '/api/addresses'],
      ['CreatePersonCommand', '/api/people'],
      ['ListUsersQuery', '/api/users'],
      ['ListUserQuery', '/api/users'],
      ['ListCategoriesQuery', '/api/categories'],
      ['ListOrderItemsQuery', '/api/order-items'],
      ['ListPeopleQuery', '/api/people'],
    ];
    for (const [messageType, path] of cases) {
      it(`${messageType} → ${path}`, () => {
        expect(deriveRoutes(contract(messageType))[0]?.path).to.equal(path);
      });
    }

    it('normalises a plural written in a get/update name', () => {
      expect(deriveRoutes(contract('GetUsersQuery'))[0]?.path).to.equal('/api/users/:id');
    });
  });

  describe('the id parameter', () => {
    it('is :<resource>Id when the input schema has that field', () => {
      expect(routes(contract('GetUserQuery', { userId: { type: 'string' } }))).to.deep.equal([
        'GET /api/users/:userId get',
        'GET /api/users?userId get',
      ]);
      expect(routes(contract('UpdateUserCommand', { userId: {}, email: {} }))).to.deep.equal([
        'PUT /api/users/:userId update',
      ]);
      expect(routes(contract('DeleteUserCommand', { userId: {} }))).to.deep.equal(['DELETE /api/users/:userId delete']);
    });

    it('uses the singular camelCase resource for multi-word resources', () => {
      expect(routes(contract('GetOrderItemQuery', { orderItemId: {} }))[0]).to.equal(
        'GET /api/order-items/:orderItemId get',
      );
    });

    it('is :id when the field is absent, or only inherited', () => {
      expect(routes(contract('DeleteUserCommand', { id: {} }))).to.deep.equal(['DELETE /api/users/:id delete']);
      const noProperties: Contract = { ...contract('GetUserQuery'), inputSchema: { type: 'object' } };
      expect(deriveRoutes(noProperties)[0]?.path).to.equal('/api/users/:id');
      const inherited = contract('GetUserQuery', Object.create({ userId: {} }) as Record<string, unknown>);
      expect(deriveRoutes(inherited)[0]?.path).to.equal('/api/users/:id');
    });
  });

  describe('action-style and other names', () => {
    it('a message type without a suffix is an action-style command', () => {
      expect(routes(contract('CreateProduct'))).to.deep.equal([
        'POST /api/create-product command',
        'POST /api/actions dispatch=body command',
      ]);
      expect(routes(contract('create-product'))).to.deep.equal([
        'POST /api/create-product command',
        'POST /api/actions dispatch=body command',
      ]);
    });

    it('a verb without an upper-case resource is not a resource route', () => {
      expect(routes(contract('Createcommand'))).to.deep.equal([
        'POST /api/createcommand command',
        'POST /api/actions dispatch=body command',
      ]);
      expect(routes(contract('GetawayQuery'))).to.deep.equal(['GET /api/data dispatch=query query']);
    });

    it('an action named like the generic route only uses the generic route', () => {
      expect(routes(contract('ActionsCommand'))).to.deep.equal(['POST /api/actions dispatch=body command']);
      expect(routes(contract('Command'))).to.deep.equal(['POST /api/actions dispatch=body command']);
    });
  });

  describe('the http override', () => {
    it('gives exactly its method and paths, with the kind from the name', () => {
      const c = contract(
        'AuthenticateCommand',
        {},
        { http: { method: 'POST', paths: ['/api/auth/authenticate', '/api/login'] } },
      );
      expect(deriveRoutes(c)).to.deep.equal([
        { method: 'POST', path: '/api/auth/authenticate', messageType: 'AuthenticateCommand', kind: 'command' },
        { method: 'POST', path: '/api/login', messageType: 'AuthenticateCommand', kind: 'command' },
      ]);
    });

    it('replaces derivation for a resource name too', () => {
      const c = contract(
        'GetUserPermissionsQuery',
        { userId: {} },
        { http: { method: 'GET', paths: ['/api/users/:userId/permissions'] } },
      );
      expect(routes(c)).to.deep.equal(['GET /api/users/:userId/permissions get']);
    });
  });

  it('is pure: the same contract gives equal routes every time and is not modified', () => {
    const c = contract('GetUserQuery', { userId: {} });
    const before = JSON.stringify(c);
    expect(deriveRoutes(c)).to.deep.equal(deriveRoutes(c));
    expect(JSON.stringify(c)).to.equal(before);
  });
});

describe('classify', () => {
  it('names kind and resource', () => {
    expect(classify('CreateOrderItemCommand')).to.deep.equal({ kind: 'create', resource: 'OrderItem' });
    expect(classify('ListUsersQuery')).to.deep.equal({ kind: 'list', resource: 'Users' });
    expect(classify('ResetPasswordCommand')).to.deep.equal({ kind: 'command', action: 'ResetPassword' });
    expect(classify('StatsQuery')).to.deep.equal({ kind: 'query', action: 'Stats' });
    expect(classify('create-product')).to.deep.equal({ kind: 'command', action: 'create-product' });
  });
});
