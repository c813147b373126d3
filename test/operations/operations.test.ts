import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { ContractRegistry } from '../../plugin/contracts/registry';
import type { ConfigSync } from '../../plugin/config-writer/config-sync';
import { TestConfigSync } from '../support/config-sync';
import { resolveSettings } from '../../plugin/settings';
import { discoveryListing } from '../../plugin/operations/discovery';
import { debugSnapshot } from '../../plugin/operations/debug';
import type { Logger } from '../../plugin/logger';
import { referenceContracts } from '../openapi/support';
import { planRoutes } from '../../plugin/contracts/route-plan';

const quiet: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

describe('discovery listing', () => {
  const contracts = referenceContracts();
  const instances = [
    {
      service: 'users-service',
      instanceId: 'u1',
      lastSeen: 1000,
      leaseExpiresAt: 31000,
      messageTypes: contracts.filter((c) => c.targetService === 'users-service').map((c) => c.messageType),
    },
    {
      service: 'auth-service',
      instanceId: 'a1',
      lastSeen: 2000,
      leaseExpiresAt: 32000,
      messageTypes: ['AuthenticateCommand'],
    },
  ];

  it('gives every contract its generated routes, success status and announcing instances', () => {
    const listing = discoveryListing(planRoutes(contracts), instances);
    expect(listing.count).to.equal(contracts.length);
    expect(listing.services).to.deep.equal(['auth-service', 'users-service']);
    const get = listing.contracts.find((c) => c.messageType === 'GetUserQuery')!;
    expect(get.endpoints).to.deep.equal([
      { method: 'GET', path: '/api/users', successStatus: 200, whenQuery: 'userId' },
      { method: 'GET', path: '/api/users/:userId', successStatus: 200 },
    ]);
    expect(get.instances).to.deep.equal([
      {
        service: 'users-service',
        instanceId: 'u1',
        lastSeen: new Date(1000).toISOString(),
        leaseExpiresAt: new Date(31000).toISOString(),
      },
    ]);
    expect(get.requiredPermissions).to.deep.equal(['users:read']);
    expect(get.inputSchema).to.have.property('properties');
    const create = listing.contracts.find((c) => c.messageType === 'CreateUserCommand')!;
    expect(create.endpoints).to.deep.equal([{ method: 'POST', path: '/api/users', successStatus: 201 }]);
    const del = listing.contracts.find((c) => c.messageType === 'DeleteUserCommand')!;
    expect(del.endpoints[0]!.successStatus).to.equal(204);
    const login = listing.contracts.find((c) => c.messageType === 'AuthenticateCommand')!;
    expect(login.public).to.equal(true);
    expect(login.endpoints.map((e) => e.path)).to.deep.equal(['/api/auth/authenticate', '/api/login']);
    expect(login.instances.map((i) => i.instanceId)).to.deep.equal(['a1']);
    expect(listing.contracts.find((c) => c.messageType === 'LogoutCommand')!.instances).to.deep.equal([]);
  });

  it('lists under a contract only the instances of the service that serves it, not those whose claim was refused', () => {
    const registry = new ContractRegistry();
    const get = {
      messageType: 'GetUserQuery',
      targetService: 'users-service',
      inputSchema: {},
      outputSchema: {},
      requiredPermissions: [],
    };
    const other = {
      messageType: 'GetOrderQuery',
      targetService: 'orders-service',
      inputSchema: {},
      outputSchema: {},
      requiredPermissions: [],
    };
    expect(
      registry.apply({ service: 'users-service', instanceId: 'u1', ttlMs: 60_000, contracts: [get] }).accepted,
    ).to.equal(true);
    // A second service claims the same message type: the registry refuses that claim, it serves only its own.
    registry.apply({
      service: 'orders-service',
      instanceId: 'o1',
      ttlMs: 60_000,
      contracts: [other, { ...get, targetService: 'orders-service' }],
    });
    expect(registry.refusals().map((r) => `${r.service} ${r.messageType}`)).to.deep.equal([
      'orders-service GetUserQuery',
    ]);

    const listing = discoveryListing(
      planRoutes(registry.contracts()),
      registry.instances(),
      registry.conflicts(),
      registry.refusals(),
    );
    const instancesOf = (messageType: string): string[] =>
      listing.contracts.find((c) => c.messageType === messageType)!.instances.map((i) => i.instanceId);
    expect(instancesOf('GetUserQuery')).to.deep.equal(['u1']);
    expect(instancesOf('GetOrderQuery')).to.deep.equal(['o1']);
    expect(listing.conflicts.refused.map((r) => r.service)).to.deep.equal(['orders-service']);
  });

  it('marks generic routes', () => {
    const action = {
      messageType: 'ResetPasswordCommand',
      targetService: 'auth',
      inputSchema: {},
      outputSchema: {},
      requiredPermissions: [],
    };
    const [listed] = discoveryListing(planRoutes([action]), []).contracts;
    expect(listed!.endpoints).to.deep.equal([
      { method: 'POST', path: '/api/actions', successStatus: 200, generic: true },
      { method: 'POST', path: '/api/reset-password', successStatus: 200 },
    ]);
  });
});

describe('debug snapshot', () => {
  it("shows each entry's age and remaining lease, and each instance's", () => {
    const contract = {
      messageType: 'GetUserQuery',
      targetService: 'users-service',
      inputSchema: {},
      outputSchema: {},
      requiredPermissions: [],
    };
    const snapshot = debugSnapshot({
      now: 10_000,
      bus: { kind: 'amqp', state: 'up' },
      contracts: [contract],
      instances: [
        {
          service: 'users-service',
          instanceId: 'u1',
          lastSeen: 4000,
          leaseExpiresAt: 34_000,
          messageTypes: ['GetUserQuery'],
        },
        {
          service: 'users-service',
          instanceId: 'u2',
          lastSeen: 7000,
          leaseExpiresAt: 37_000,
          messageTypes: ['GetUserQuery'],
        },
      ],
      conflicts: [],
    });
    expect(snapshot.entries).to.deep.equal([
      {
        messageType: 'GetUserQuery',
        targetService: 'users-service',
        instanceIds: ['u1', 'u2'],
        ageMs: 3000,
        leaseRemainingMs: 27_000,
      },
    ]);
    expect((snapshot.instances as Array<Record<string, unknown>>)[0]).to.deep.include({
      instanceId: 'u1',
      ageMs: 6000,
      leaseRemainingMs: 24_000,
      messageTypes: ['GetUserQuery'],
    });
    expect(snapshot.now).to.equal(new Date(10_000).toISOString());
    expect(snapshot.bus).to.deep.equal({ kind: 'amqp', state: 'up' });
  });
});

describe('the not-found catch-all in gateway.config.yml', () => {
  let dir: string;
  let file: string;
  let registry: ContractRegistry;
  let sync: ConfigSync;
  const loads: string[] = [];

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'contracts-notfound-'));
    file = join(dir, 'gateway.config.yml');
    writeFileSync(
      file,
      `# operator
apiEndpoints:
  legacy:
    host: '*'
    paths: ['/api/legacy']
policies:
  - terminate
pipelines:
  legacy:
    apiEndpoints: [legacy]
    policies:
      - terminate: [{ action: { statusCode: 200, message: old } }]
`,
    );
    registry = new ContractRegistry();
    registry.apply({
      service: 'users-service',
      instanceId: 'u1',
      contracts: referenceContracts().filter((c) => c.targetService === 'users-service'),
      ttlMs: 60_000,
    });
    const host = {
      config: { gatewayConfigPath: file, loadConfig: () => void loads.push('gateway') },
      eventBus: { emit: () => undefined },
    };
    sync = new TestConfigSync(registry, host, resolveSettings({ writeDebounceMs: 0 }, {}), quiet);
  });
  afterEach(() => {
    sync.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('is the very last apiEndpoint, after the hand-written ones and every contract endpoint, for /api and below, all methods', async () => {
    sync.start();
    const cfg = parse(readFileSync(file, 'utf8'));
    const names = Object.keys(cfg.apiEndpoints);
    expect(names[0]).to.equal('legacy');
    expect(names[names.length - 1]).to.equal('contracts-not-found');
    expect(names.filter((n) => n.startsWith('contracts-get-'))).not.to.be.empty;
    expect(cfg.apiEndpoints['contracts-not-found']).to.deep.equal({ host: '*', paths: ['/api', '/api/*'] });
    expect(cfg.pipelines['contracts-not-found']).to.deep.equal({
      apiEndpoints: ['contracts-not-found'],
      policies: [{ 'not-found': [{ action: {} }] }],
    });
    expect(cfg.policies).to.include('not-found');

    // Still there, still last, when every contract is gone: /api answers JSON 404 with nothing discovered.
    registry.apply({ service: 'users-service', instanceId: 'u1', contracts: [], ttlMs: 0, withdrawn: true });
    await sync.settled();
    const emptied = parse(readFileSync(file, 'utf8'));
    const left = Object.keys(emptied.apiEndpoints);
    expect(left[0]).to.equal('legacy');
    expect(left[left.length - 1]).to.equal('contracts-not-found');
    expect(left.filter((n) => n.startsWith('contracts-get-'))).to.deep.equal([]);
  });
});
