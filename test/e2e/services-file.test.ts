import { expect } from 'chai';
import * as amqp from 'amqplib';
import { startGateway, eventually, type GatewayProcess } from '../support/gateway-process';
import { uniquePrefix } from '../support/env';
import { httpAs } from '../support/http';
import { rogueContract } from '../support/rogue';
import { createBrokerUsers, type BrokerUsers } from '../support/broker-users';
import { AmqpTransport } from '../../plugin/bus/amqp';
import { serve, type RunningService } from '../../sdk';

const admin = httpAs(['admin:all']);

/**
 * The services file as the one list: broker users made from it with contracts-broker-definitions --services and
 * rabbitmqctl, and the gateway reading the same file (BUS_SERVICES_FILE). A rogue service with a valid broker user
 * of its own cannot take a message type the file gives another service, not even while its owner is away, and a
 * claimant killed without withdrawing loses its claim within maxLeaseMs.
 */
describe('ownership from the services file, through the real broker with per-service users', function () {
  this.timeout(120_000);
  const prefix = uniquePrefix('svcfile');
  let users: BrokerUsers | undefined;
  let gw: GatewayProcess | undefined;
  const transports: AmqpTransport[] = [];
  const running: RunningService[] = [];

  async function startOwner(): Promise<RunningService> {
    const transport = new AmqpTransport(users!.url('owner-service'), { prefix });
    transports.push(transport);
    await transport.start();
    const service = await serve({
      transport,
      service: 'owner-service',
      ttlMs: 3000,
      acceptRequestsFrom: users!.user('gateway'),
      operations: [
        {
          contract: {
            messageType: 'ListOwnedQuery',
            inputSchema: { type: 'object' },
            outputSchema: { type: 'array' },
            requiredPermissions: [],
          },
          handle: () => ['from the owner'],
        },
      ],
    });
    running.push(service);
    return service;
  }

  /** Publishes an announcement as `service`'s broker user with its user_id (what its credential allows), then disconnects. */
  async function announceAs(service: string, body: Record<string, unknown>): Promise<void> {
    const conn = await amqp.connect(users!.url(service));
    try {
      const ch = await conn.createConfirmChannel();
      ch.publish(
        `${prefix}.announcements.${service}`,
        `announce.${body.service as string}`,
        Buffer.from(JSON.stringify(body)),
        {
          userId: users!.user(service),
          contentType: 'application/json',
        },
      );
      await ch.waitForConfirms();
    } finally {
      await conn.close().catch(() => undefined);
    }
  }

  const discovery = async () =>
    (await admin('GET', `${gw!.baseUrl}/api/discovery/contracts`)).body as {
      services: string[];
      contracts: Array<{ messageType: string }>;
      conflicts: { refused: Array<{ service: string; messageType: string; reason: string }> };
    };

  before(async () => {
    users = await createBrokerUsers(prefix, { 'owner-service': ['ListOwned*'], 'rogue-service': ['Rogue*'] });
    gw = await startGateway({ ...users.gatewayEnv(), MAX_LEASE_MS: '3000' });
  });

  after(async () => {
    for (const service of running) await service.stop().catch(() => undefined);
    for (const transport of transports) await transport.close().catch(() => undefined);
    await gw?.stop().catch(() => undefined);
    await users?.remove();
  });

  it('starts without the shared-credential warning, and the owner serves its route', async () => {
    await startOwner();
    await eventually(
      async () => expect((await admin('GET', `${gw!.baseUrl}/api/owneds`)).body).to.deep.equal(['from the owner']),
      15_000,
    );
    expect(gw!.output()).to.not.match(/announcements are unauthenticated|shared credential/);
  });

  it('refuses the rogue’s claim of the owner’s type while the owner is away; the owner’s restart gets the route back at once', async () => {
    await running.shift()!.stop();
    // The withdrawal first: a request sent before the gateway took it waits for its deadline in the work queue
    // the definitions keep (nobody consumes it any more).
    await eventually(async () => expect((await discovery()).services).to.not.include('owner-service'), 10_000);
    expect((await admin('GET', `${gw!.baseUrl}/api/owneds`)).status).to.equal(404);
    // A valid broker user of its own, its own routing key and user_id: only the services file stands in the way.
    const rogue = {
      service: 'rogue-service',
      instanceId: 'r1',
      ttlMs: 3_600_000,
      contracts: [rogueContract('ListOwnedQuery', 'rogue-service'), rogueContract('RogueQuery', 'rogue-service')],
    };
    await announceAs('rogue-service', rogue);
    await eventually(async () => {
      expect(gw!.output()).to.include(
        'refused ListOwnedQuery from rogue-service: message type is pinned to owner-service',
      );
      expect((await discovery()).conflicts.refused).to.deep.include({
        service: 'rogue-service',
        messageType: 'ListOwnedQuery',
        reason: 'message type is pinned to owner-service',
        holder: 'owner-service',
      });
    }, 10_000);
    expect(gw!.output()).to.include(
      'rogue-service instance r1 asked for a lease of 3600000 ms; clamped to 3000 ms (maxLeaseMs)',
    );
    expect((await admin('GET', `${gw!.baseUrl}/api/owneds`)).status).to.equal(404);
    // A type the file gives nobody is refused too (no first-come), and so is an unlisted service.
    await announceAs('rogue-service', { ...rogue, contracts: [rogueContract('UnclaimedQuery', 'rogue-service')] });
    await eventually(
      async () =>
        expect(gw!.output()).to.include(
          'refused UnclaimedQuery from rogue-service: message type is not among those the services file gives rogue-service',
        ),
      10_000,
    );
    // The owner comes back while the rogue still announces: its route is served as soon as it is heard.
    await announceAs('rogue-service', rogue);
    const back = Date.now();
    await startOwner();
    await eventually(
      async () => expect((await admin('GET', `${gw!.baseUrl}/api/owneds`)).body).to.deep.equal(['from the owner']),
      10_000,
      50,
    );
    expect(Date.now() - back).to.be.below(5_000);
  });

  it('a claimant killed without withdrawing loses its claim within maxLeaseMs, whatever lease it asked for', async () => {
    await announceAs('owner-service', {
      service: 'owner-service',
      instanceId: 'ghost',
      ttlMs: 3_600_000,
      contracts: [rogueContract('ListOwnedGhostQuery', 'owner-service')],
    });
    await eventually(
      async () => expect((await discovery()).contracts.map((c) => c.messageType)).to.include('ListOwnedGhostQuery'),
      10_000,
      50,
    );
    const heard = Date.now();
    // It never announces again (its connection is gone): the claim lapses within the 3 s cap (plus one lease check).
    await eventually(
      async () => expect((await discovery()).contracts.map((c) => c.messageType)).to.not.include('ListOwnedGhostQuery'),
      10_000,
      100,
    );
    expect(Date.now() - heard).to.be.below(3000 + 2500);
  });
});
