import { expect } from 'chai';
import { createHash, randomUUID } from 'node:crypto';
import { brokerDefinitions, rabbitPasswordHash } from '../../plugin/bus/broker-definitions';
import { envName, run } from '../../plugin/cli/contracts-broker-definitions';

describe('broker definitions', () => {
  const input = {
    prefix: 'contracts',
    gatewayUser: 'gateway',
    services: { 'users-service': 'users-service', 'auth-service': 'svc-auth' },
    passwords: { gateway: 'g', 'users-service': 'u', 'svc-auth': 'a' },
    salt: () => Buffer.from([1, 2, 3, 4]),
  };

  it("hashes passwords the way RabbitMQ's rabbit_password_hashing_sha256 does", () => {
    const hash = Buffer.from(rabbitPasswordHash('secret', Buffer.from([1, 2, 3, 4])), 'base64');
    expect([...hash.subarray(0, 4)]).to.deep.equal([1, 2, 3, 4]);
    expect(hash.subarray(4).toString('hex')).to.equal(
      createHash('sha256')
        .update(Buffer.from([1, 2, 3, 4, ...Buffer.from('secret')]))
        .digest('hex'),
    );
    const defs = brokerDefinitions(input);
    expect(JSON.stringify(defs)).to.not.match(/"(g|u|a)"/); // no password in clear
    expect(defs.users.map((u) => [u.name, u.hashing_algorithm])).to.deep.equal([
      ['gateway', 'rabbit_password_hashing_sha256'],
      ['users-service', 'rabbit_password_hashing_sha256'],
      ['svc-auth', 'rabbit_password_hashing_sha256'],
    ]);
  });

  it('lets only the service user publish announce.<service>, on its own exchange, and read its work queue', () => {
    const defs = brokerDefinitions(input);
    const topic = (user: string, exchange = 'contracts.announcements.auth-service') =>
      defs.topic_permissions.find((t) => t.user === user && t.exchange === exchange)!;
    const perms = (user: string) => defs.permissions.find((p) => p.user === user)!;
    expect(new RegExp(topic('svc-auth').write).test('announce.auth-service')).to.equal(true);
    expect(new RegExp(topic('svc-auth').write).test('announce.users-service')).to.equal(false);
    expect(new RegExp(topic('svc-auth').write).test('discover')).to.equal(false);
    expect(new RegExp(topic('gateway').write).test('announce.auth-service')).to.equal(false);
    // The discovery exchange: services only hear `discover` there, and publish nothing (not even announcements).
    expect(new RegExp(topic('svc-auth', 'contracts.discovery').write).test('announce.auth-service')).to.equal(false);
    expect(new RegExp(perms('svc-auth').write).test('contracts.discovery')).to.equal(false);
    expect(new RegExp(perms('svc-auth').write).test('contracts.announcements.auth-service')).to.equal(true);
    expect(new RegExp(perms('svc-auth').write).test('contracts.announcements.users-service')).to.equal(false);
    expect(new RegExp(perms('svc-auth').write).test('contracts.announcements')).to.equal(false);
    for (const user of ['gateway', 'svc-auth'])
      expect(new RegExp(perms(user).read).test('contracts.svc.users-service'), user).to.equal(false);
    expect(new RegExp(perms('users-service').read).test('contracts.svc.users-service')).to.equal(true);
    // Services neither configure the exchanges (declare, delete) nor publish requests.
    for (const exchange of ['contracts.requests', 'contracts.discovery'])
      expect(new RegExp(perms('svc-auth').configure).test(exchange)).to.equal(false);
    expect(new RegExp(perms('svc-auth').write).test('contracts.requests')).to.equal(false);
    // ... nor declare their work queue (a name it could also give an exchange it reads and writes): it is declared here.
    expect(new RegExp(perms('svc-auth').configure).test('contracts.svc.auth-service')).to.equal(false);
    expect(defs.queues.map((q) => [q.name, q.durable, q.arguments])).to.deep.equal([
      ['contracts.svc.users-service', true, {}],
      ['contracts.svc.auth-service', true, {}],
    ]);
    expect(defs.bindings.map((b) => [b.source, b.destination, b.routing_key])).to.deep.equal([
      ['contracts.requests', 'contracts.svc.users-service', 'users-service'],
      ['contracts.requests', 'contracts.svc.auth-service', 'auth-service'],
    ]);
    expect(brokerDefinitions({ ...input, queueType: 'quorum' }).queues[0]?.arguments).to.deep.equal({
      'x-queue-type': 'quorum',
      'x-delivery-limit': 5,
    });
    expect(defs.exchanges.map((e) => [e.name, e.type])).to.deep.equal([
      ['contracts.requests', 'topic'],
      ['contracts.discovery', 'topic'],
      ['contracts.replies', 'topic'],
      ['contracts.announcements', 'topic'],
      ['contracts.announcements.users-service', 'topic'],
      ['contracts.replies.users-service', 'topic'],
      ['contracts.announcements.auth-service', 'topic'],
      ['contracts.replies.auth-service', 'topic'],
    ]);
    expect(JSON.stringify(defs)).to.not.include('.rpc');
  });

  it('lets a service configure its server-named discovery queue (amq.gen-…), never a name of its own but under --legacy-replies', () => {
    const id = randomUUID();
    const service = (legacyReplies: boolean) =>
      brokerDefinitions({ ...input, legacyReplies }).permissions.find((p) => p.user === 'svc-auth')!;
    for (const kind of ['configure', 'write', 'read'] as const) {
      expect(new RegExp(service(false)[kind]).test('amq.gen-f5ZugF8VAm397aMh1UmiDQ'), kind).to.equal(true);
      // A name it picks could also name an exchange of its own: refused, unless old services still run.
      expect(new RegExp(service(false)[kind]).test(`contracts.discover.${id}`), kind).to.equal(false);
      expect(new RegExp(service(true)[kind]).test(`contracts.discover.${id}`), kind).to.equal(true);
      for (const name of ['amq.topic', 'amq.direct', 'amq.gen-', 'amq.gen-x.y'])
        expect(new RegExp(service(false)[kind]).test(name), `${kind} ${name}`).to.equal(false);
    }
  });

  it("binds a service's queues to the request exchange with its own name only; the gateway publishes any key there", () => {
    const defs = brokerDefinitions(input);
    const requests = (user: string) =>
      defs.topic_permissions.find((t) => t.user === user && t.exchange === 'contracts.requests')!;
    const bindable = (user: string, key: string) => new RegExp(requests(user).read).test(key);
    expect(bindable('svc-auth', 'auth-service')).to.equal(true);
    for (const key of ['users-service', '#', '*', 'auth-service.#', 'auth-servicex', 'xauth-service', ''])
      expect(bindable('svc-auth', key), key).to.equal(false);
    expect(bindable('users-service', 'users-service')).to.equal(true);
    expect(bindable('users-service', 'auth-service')).to.equal(false);
    for (const user of ['svc-auth', 'users-service'])
      expect(new RegExp(requests(user).write).test('users-service'), user).to.equal(false);
    expect(new RegExp(requests('gateway').write).test('users-service')).to.equal(true);
    expect(new RegExp(requests('gateway').read).test('users-service')).to.equal(false);
    // The gateway declares, binds and consumes its own reply queues; no service may read them.
    const gateway = defs.permissions.find((p) => p.user === 'gateway')!;
    const replyQueue = 'contracts.reply.0d9e2f4c-1b7a-4c55-9a61-3f0e2b8c7d11.auth-service';
    for (const kind of ['configure', 'write', 'read'] as const)
      expect(new RegExp(gateway[kind]).test(replyQueue), kind).to.equal(true);
    for (const user of ['svc-auth', 'users-service']) {
      const p = defs.permissions.find((q) => q.user === user)!;
      expect(new RegExp(p.read).test(replyQueue), user).to.equal(false);
      expect(new RegExp(p.configure).test(replyQueue), user).to.equal(false);
    }
  });

  it('lets a service reply through P.replies.<service> to its own reply queues only, never through the default exchange', () => {
    const defs = brokerDefinitions(input);
    const perms = (user: string) => defs.permissions.find((p) => p.user === user)!;
    const replies = (user: string) =>
      defs.topic_permissions.find((t) => t.user === user && t.exchange === 'contracts.replies.auth-service')!;
    const id = '0d9e2f4c-1b7a-4c55-9a61-3f0e2b8c7d11';
    for (const [user, service] of [
      ['svc-auth', 'auth-service'],
      ['users-service', 'users-service'],
    ] as const) {
      expect(new RegExp(perms(user).write).test(`contracts.replies.${service}`), user).to.equal(true);
      expect(new RegExp(perms(user).write).test('contracts.replies'), user).to.equal(false); // shared: no more
      expect(new RegExp(perms(user).write).test('amq.default'), user).to.equal(false);
      expect(new RegExp(perms(user).read).test(`contracts.replies.${service}`), user).to.equal(false); // may bind nothing there
    }
    const sendable = (key: string) => new RegExp(replies('svc-auth').write).test(key);
    expect(sendable(`contracts.reply.${id}.auth-service`)).to.equal(true);
    for (const key of [
      `contracts.reply.${id}.users-service`,
      `contracts.reply.${id}.auth-servicex`,
      `contracts.reply.${id}.x.auth-service`,
      `contracts.reply.${id}`,
      'auth-service',
      `other.reply.${id}.auth-service`,
    ]) {
      expect(sendable(key), key).to.equal(false);
    }
    expect(new RegExp(replies('gateway').write).test(`contracts.reply.${id}.auth-service`)).to.equal(false);
    expect(new RegExp(replies('gateway').read).test(`contracts.reply.${id}.auth-service`)).to.equal(true);
    // The transition switches: --legacy-topology gives back the shared exchanges and the work queue's declaration,
    // --legacy-replies (implying it) also the default exchange and old services' P.discover.<uuid> queues.
    const topology = brokerDefinitions({ ...input, legacyTopology: true });
    const topologyWrite = topology.permissions.find((p) => p.user === 'svc-auth')!.write;
    expect(topologyWrite.replace('|contracts\\.discovery|contracts\\.replies', '')).to.equal(perms('svc-auth').write);
    expect(topology.queues).to.deep.equal([]);
    const legacy = brokerDefinitions({ ...input, legacyReplies: true });
    const legacyWrite = legacy.permissions.find((p) => p.user === 'svc-auth')!.write;
    expect(new RegExp(legacyWrite).test('amq.default')).to.equal(true);
    expect(legacyWrite.replace('|amq\\.default', '').replace('|contracts\\.discover\\.[A-Za-z0-9-]+', '')).to.equal(
      topologyWrite,
    );
    // ... and lets a gateway of the previous version declare its single reply queue after a reconnect.
    expect(new RegExp(perms('gateway').configure).test(`contracts.reply.${id}`)).to.equal(false);
    expect(
      new RegExp(legacy.permissions.find((p) => p.user === 'gateway')!.configure).test(`contracts.reply.${id}`),
    ).to.equal(true);
    expect(
      JSON.parse(run(['--service', 'a', '--legacy-replies'], { BROKER_PASSWORD_GATEWAY: 'x', BROKER_PASSWORD_A: 'y' }))
        .permissions[1].write,
    ).to.include('amq\\.default');
  });

  it('reads passwords from the environment and refuses to write definitions without one', () => {
    expect(envName('svc-auth')).to.equal('BROKER_PASSWORD_SVC_AUTH');
    const out = JSON.parse(
      run(['--service', 'users-service', '--prefix', 'p'], {
        BROKER_PASSWORD_GATEWAY: 'x',
        BROKER_PASSWORD_USERS_SERVICE: 'y',
      }),
    );
    expect(out.users.map((u: { name: string }) => u.name)).to.deep.equal(['gateway', 'users-service']);
    expect(() => run(['--service', 'users-service'], { BROKER_PASSWORD_GATEWAY: 'x' })).to.throw(
      'no password for broker user users-service: set BROKER_PASSWORD_USERS_SERVICE',
    );
    expect(() => run([], {})).to.throw('name at least one --service');
    expect(() =>
      run(['--service', 'bad name'], { BROKER_PASSWORD_GATEWAY: 'x', BROKER_PASSWORD_BAD_NAME: 'y' }),
    ).to.throw('is not a usable name');
  });

  describe('caps', () => {
    const id = '0d9e2f4c-1b7a-4c55-9a61-3f0e2b8c7d11';
    const policies = (defs: ReturnType<typeof brokerDefinitions>) =>
      Object.fromEntries(
        (defs.parameters ?? []).flatMap((p) => (p.component === 'operator_policy' ? [[p.name, p.value]] : [])),
      );
    /** The definition of the operator policy that applies to `queue` (at most one may match). */
    const capsOf = (defs: ReturnType<typeof brokerDefinitions>, queue: string) => {
      const matching = Object.values(policies(defs)).filter((p) => new RegExp(p.pattern).test(queue));
      expect(matching.length, queue).to.be.at.most(1);
      return matching[0]?.definition;
    };

    it("bound every queue a service user may declare, and none of the gateway's own", () => {
      const defs = brokerDefinitions(input);
      const service = defs.permissions.find((p) => p.user === 'svc-auth')!;
      expect(new RegExp(service.configure).test('amq.gen-f5ZugF8VAm397aMh1UmiDQ')).to.equal(true);
      expect(capsOf(defs, 'amq.gen-f5ZugF8VAm397aMh1UmiDQ')).to.include.keys(
        'max-length',
        'max-length-bytes',
        'expires',
      );
      // The work queue comes with the definitions, which the service cannot declare again: bounded, never expired.
      expect(new RegExp(service.configure).test('contracts.svc.auth-service')).to.equal(false);
      expect(capsOf(defs, 'contracts.svc.auth-service')).to.deep.equal({
        'max-length': 10_000,
        'max-length-bytes': 64 * 1024 * 1024,
      });
      // Under the legacy topology services declare it themselves, and one left behind expires.
      const legacy = brokerDefinitions({ ...input, legacyTopology: true });
      expect(
        new RegExp(legacy.permissions.find((p) => p.user === 'svc-auth')!.configure).test('contracts.svc.auth-service'),
      ).to.equal(true);
      expect(capsOf(legacy, 'contracts.svc.auth-service')).to.deep.equal({
        'max-length': 10_000,
        'max-length-bytes': 64 * 1024 * 1024,
        expires: 15_000,
      });
      expect(capsOf(defs, 'amq.gen-x')).to.deep.equal({
        'max-length': 100,
        'max-length-bytes': 1024 * 1024,
        expires: 15_000,
        'message-ttl': 60_000,
      });
      for (const queue of [`contracts.reply.${id}.auth-service`, `contracts.announce.${id}`, 'other.svc.auth-service'])
        expect(capsOf(defs, queue), queue).to.equal(undefined);
      // Old services' discovery queues are theirs to declare only under --legacy-replies, and bounded then.
      expect(capsOf(defs, `contracts.discover.${id}`)).to.equal(undefined);
      expect(capsOf(brokerDefinitions({ ...input, legacyReplies: true }), `contracts.discover.${id}`)).to.include.keys(
        'max-length-bytes',
      );
      // RabbitMQ 3.10 skips an operator_policies section: the policies travel as the parameters they are stored as.
      expect(defs).to.not.have.property('operator_policies');
      expect(Object.keys(policies(defs))).to.deep.equal([
        'contracts-work-queue-caps',
        'contracts-server-named-queue-caps',
      ]);
    });

    it('limit connections and channels per user and connections and queues per vhost, sized by the processes', () => {
      const limits = (caps: { instances: number; gateways: number }) => {
        const defs = brokerDefinitions({ ...input, vhost: 'bus', caps });
        return {
          users: Object.fromEntries(defs.users.map((u) => [u.name, u.limits])),
          vhost: defs.parameters?.find((p) => p.component === 'vhost-limits'),
        };
      };
      expect(limits({ instances: 1, gateways: 1 })).to.deep.equal({
        users: {
          // Each process counted twice (a dropped connection may outlive its replacement), 16 channels each, the
          // gateway one more per service (its reply consumers).
          gateway: { 'max-connections': 2, 'max-channels': 36 },
          'users-service': { 'max-connections': 2, 'max-channels': 32 },
          'svc-auth': { 'max-connections': 2, 'max-channels': 32 },
        },
        vhost: {
          vhost: 'bus',
          component: 'vhost-limits',
          name: 'limits',
          // 2 gateway connections × (2 reply + 2 intake + 1 shared queues) + 2 services × (2 discovery + 1 work queue)
          value: { 'max-connections': 6, 'max-queues': 16 },
        },
      });
      const defaults = limits({ instances: 32, gateways: 8 });
      expect(defaults.users['svc-auth']).to.deep.equal({ 'max-connections': 64, 'max-channels': 1024 });
      expect(defaults.vhost?.value).to.deep.equal({ 'max-connections': 144, 'max-queues': 210 });
      expect(brokerDefinitions(input).users[1]?.limits).to.deep.equal(defaults.users['users-service']);
    });

    it('are sized by --max-instances and --max-gateways, and left out by --no-caps', () => {
      const env = { BROKER_PASSWORD_GATEWAY: 'x', BROKER_PASSWORD_A: 'y' };
      const out = (...args: string[]) => JSON.parse(run(['--service', 'a', ...args], env));
      expect(out('--max-instances', '3', '--max-gateways', '2').users[1].limits).to.deep.equal({
        'max-connections': 6,
        'max-channels': 96,
      });
      const none = out('--no-caps');
      expect(none).to.not.have.property('parameters');
      expect(none.users[0]).to.not.have.property('limits');
      expect(out().users[1].limits).to.deep.equal({ 'max-connections': 64, 'max-channels': 1024 });
      for (const bad of ['0', '-1', '1.5', 'x', ''])
        expect(() => out('--max-instances', bad), bad).to.throw('--max-instances needs a whole number from 1');
      expect(() => out('--no-caps', '--max-gateways', '2')).to.throw('--no-caps leaves the caps out');
    });
  });
});
