import { expect } from 'chai';
import { ContractRegistry } from '../../plugin/contracts/registry';
import type { OwnershipRules } from '../../plugin/contracts/ownership';
import type { Announcement, Contract } from '../../plugin/contracts/types';

function contract(messageType: string, targetService: string, extra: Partial<Contract> = {}): Contract {
  return {
    messageType,
    targetService,
    inputSchema: { type: 'object' },
    outputSchema: {},
    requiredPermissions: ['users:read'],
    ...extra,
  };
}

function announce(service: string, instanceId: string, contracts: Contract[]): Announcement {
  return { service, instanceId, contracts, ttlMs: 10_000 };
}

function setup(rules: OwnershipRules = {}) {
  let now = 1_000;
  const warnings: string[] = [];
  const registry = new ContractRegistry({ now: () => now, logger: { warn: (m) => warnings.push(m) }, rules });
  return { registry, warnings, tick: (ms: number) => (now += ms) };
}

const listUsers = (service: string, extra: Partial<Contract> = {}) => contract('ListUsersQuery', service, extra);

describe('contract ownership', () => {
  it('a service whose name sorts first cannot take a message type another service holds', () => {
    const { registry } = setup();
    registry.apply(announce('users-service', 'u1', [listUsers('users-service')]));
    registry.apply(announce('rogue-service', 'r1', [listUsers('rogue-service', { public: true })]));
    expect(registry.get('ListUsersQuery')?.targetService).to.equal('users-service');
    expect(registry.get('ListUsersQuery')?.public).to.equal(undefined);
    expect(registry.refusals().map((r) => [r.service, r.holder])).to.deep.equal([['rogue-service', 'users-service']]);
  });

  it('within one service the newest instance still replaces the old one (rolling deploy)', () => {
    const { registry, tick } = setup();
    registry.apply(announce('users-service', 'old', [listUsers('users-service', { requiredPermissions: ['v1'] })]));
    tick(1_000);
    registry.apply(announce('users-service', 'new', [listUsers('users-service', { requiredPermissions: ['v2'] })]));
    expect(registry.get('ListUsersQuery')?.requiredPermissions).to.deep.equal(['v2']);
    registry.apply({ service: 'users-service', instanceId: 'old', withdrawn: true });
    expect(registry.get('ListUsersQuery')?.requiredPermissions).to.deep.equal(['v2']);
    expect(registry.refusals()).to.deep.equal([]);
  });

  it('a service cannot take a route another service holds through another message type', () => {
    const { registry } = setup();
    registry.apply(announce('auth-service', 'a1', [contract('LoginCommand', 'auth-service')]));
    registry.apply(
      announce('rogue', 'r1', [
        contract('AaaStealCommand', 'rogue', { http: { method: 'POST', paths: ['/api/login'] } }),
      ]),
    );
    expect(registry.get('LoginCommand')?.targetService).to.equal('auth-service');
    expect(registry.get('AaaStealCommand')).to.equal(undefined);
    expect(registry.refusals()).to.deep.equal([
      {
        service: 'rogue',
        messageType: 'AaaStealCommand',
        reason: 'route POST /api/login is held by auth-service',
        holder: 'auth-service',
      },
    ]);
  });

  it('a route that differs only in case, a trailing slash or a parameter name is the same route', () => {
    const { registry } = setup();
    registry.apply(announce('auth-service', 'a1', [contract('LoginCommand', 'auth-service')]));
    registry.apply(
      announce('users-service', 'u1', [
        listUsers('users-service'),
        contract('GetUserQuery', 'users-service', {
          inputSchema: { type: 'object', properties: { userId: { type: 'string' } } },
        }),
      ]),
    );
    const steal = (name: string, method: 'GET' | 'POST', path: string) =>
      contract(name, 'rogue', { http: { method, paths: [path] } });
    registry.apply(
      announce('rogue', 'r1', [
        steal('AaaLoginCommand', 'POST', '/api/LOGIN'),
        steal('AabLoginCommand', 'POST', '/api/Login/'),
        steal('AacUserQuery', 'GET', '/api/users/:aaa'),
        steal('AadUserQuery', 'GET', '/api/users/0b7d7c6e'),
        steal('AaeUsersQuery', 'GET', '/api/Users'),
      ]),
    );
    expect(registry.contracts().map((c) => c.targetService)).to.not.include('rogue');
    expect(registry.refusals().map((r) => [r.messageType, r.holder])).to.deep.equal([
      ['AaaLoginCommand', 'auth-service'],
      ['AabLoginCommand', 'auth-service'],
      ['AacUserQuery', 'users-service'],
      ['AadUserQuery', 'users-service'],
      ['AaeUsersQuery', 'users-service'],
    ]);
    expect(registry.refusals()[0]?.reason).to.equal(
      'route POST /api/LOGIN overlaps POST /api/login, held by auth-service',
    );
  });

  it('routes that cannot take the same request do not conflict', () => {
    const { registry } = setup();
    registry.apply(announce('users-service', 'u1', [listUsers('users-service')]));
    registry.apply(
      announce('reports', 'r1', [
        contract('UserReportQuery', 'reports', { http: { method: 'GET', paths: ['/api/users/report/:year'] } }),
      ]),
    );
    expect(registry.get('UserReportQuery')?.targetService).to.equal('reports');
    expect(registry.refusals()).to.deep.equal([]);
  });

  it('a pinned path prefix holds in any case', () => {
    const { registry } = setup({ pathPrefixes: { 'auth-service': ['/api/login'] } });
    registry.apply(
      announce('rogue', 'r1', [contract('AaaCommand', 'rogue', { http: { method: 'POST', paths: ['/api/LOGIN'] } })]),
    );
    expect(registry.refusals().map((r) => r.reason)).to.deep.equal(['path /api/LOGIN is pinned to auth-service']);
  });

  it('a query variant of a path counts as that path', () => {
    const { registry } = setup();
    registry.apply(announce('users-service', 'u1', [listUsers('users-service')]));
    registry.apply(announce('rogue', 'r1', [contract('GetUserQuery', 'rogue')])); // GET /api/users/:id and GET /api/users?id
    expect(registry.get('GetUserQuery')).to.equal(undefined);
    expect(registry.refusals()[0]?.reason).to.equal('route GET /api/users is held by users-service');
  });

  it('refuses a contract whose targetService is another service', () => {
    const { registry } = setup();
    registry.apply(announce('rogue', 'r1', [contract('ExportUsersQuery', 'users-service')]));
    expect(registry.contracts()).to.deep.equal([]);
    expect(registry.refusals()[0]?.reason).to.equal('targetService users-service is not the announcing service');
  });

  for (const path of ['/outside', '/*', '/debug/contracts', '/api', '/api/*', '/api/:anything', '/apix/y']) {
    it(`refuses http.paths ${path} unless paths outside /api/<name>/ are allowed`, () => {
      const c = contract('AaaCommand', 'svc', { http: { method: 'POST', paths: [path] } });
      const strict = setup();
      strict.registry.apply(announce('svc', 's1', [c]));
      expect(strict.registry.get('AaaCommand')).to.equal(undefined);
      expect(strict.registry.refusals()[0]?.reason).to.equal(`http.paths ${path} is outside /api/<name>/`);
      const open = setup({ allowPathsOutsideApi: true });
      open.registry.apply(announce('svc', 's1', [c]));
      expect(open.registry.get('AaaCommand')?.http?.paths).to.deep.equal([path]);
    });
  }

  it('accepts http.paths under /api/<name>/', () => {
    const { registry } = setup();
    registry.apply(
      announce('svc', 's1', [
        contract('AaaCommand', 'svc', { http: { method: 'POST', paths: ['/api/things/:id/do'] } }),
      ]),
    );
    expect(registry.get('AaaCommand')?.http?.paths).to.deep.equal(['/api/things/:id/do']);
  });

  describe('pinned in the settings', () => {
    const rules: OwnershipRules = {
      messageTypes: { 'users-service': ['ListUsersQuery', 'User*'] },
      pathPrefixes: { 'auth-service': ['/api/login', '/api/auth/'] },
      publicServices: ['auth-service'],
      httpPathServices: ['auth-service'],
    };

    it('a pinned message type goes to its service even when another announced it first', () => {
      const { registry, warnings } = setup(rules);
      registry.apply(announce('rogue', 'r1', [listUsers('rogue'), contract('UserExportQuery', 'rogue')]));
      expect(registry.contracts()).to.deep.equal([]);
      expect(registry.refusals().map((r) => r.reason)).to.deep.equal([
        'message type is pinned to users-service',
        'message type is pinned to users-service',
      ]);
      registry.apply(announce('users-service', 'u1', [listUsers('users-service')]));
      expect(registry.get('ListUsersQuery')?.targetService).to.equal('users-service');
      expect(registry.conflicts()).to.deep.equal([
        { messageType: 'ListUsersQuery', services: ['users-service', 'rogue'] },
      ]);
      expect(warnings.filter((w) => w.includes('refused ListUsersQuery from rogue'))).to.have.length(1);
    });

    it('a pinned path prefix refuses other services routes under it, by whole segments', () => {
      const { registry } = setup(rules);
      const steal = (name: string, path: string) =>
        contract(name, 'rogue', { http: { method: 'POST', paths: [path] } });
      const open = setup({ ...rules, httpPathServices: undefined });
      open.registry.apply(
        announce('rogue', 'r1', [
          contract('LoginCommand', 'rogue'),
          steal('AaaCommand', '/api/auth/token'),
          steal('BbbCommand', '/api/logins'),
        ]),
      );
      expect(open.registry.contracts().map((c) => c.messageType)).to.deep.equal(['BbbCommand']); // /api/logins is not under /api/login
      expect(open.registry.refusals().map((r) => r.reason)).to.deep.equal([
        'path /api/auth/token is pinned to auth-service',
        'path /api/login is pinned to auth-service',
      ]);
      registry.apply(announce('auth-service', 'a1', [contract('LoginCommand', 'auth-service')]));
      expect(registry.get('LoginCommand')?.targetService).to.equal('auth-service');
    });

    it('only the listed services may declare public contracts or http.paths', () => {
      const { registry } = setup(rules);
      registry.apply(
        announce('orders', 'o1', [
          contract('ListOrdersQuery', 'orders', { public: true }),
          contract('AaaCommand', 'orders', { http: { method: 'POST', paths: ['/api/aaa'] } }),
        ]),
      );
      expect(registry.contracts()).to.deep.equal([]);
      expect(registry.refusals().map((r) => r.reason)).to.deep.equal([
        'service may not declare http.paths',
        'service may not declare public contracts',
      ]);
      registry.apply(
        announce('auth-service', 'a1', [
          contract('LoginCommand', 'auth-service', { public: true, http: { method: 'POST', paths: ['/api/login'] } }),
        ]),
      );
      expect(registry.get('LoginCommand')?.public).to.equal(true);
    });
  });
});
