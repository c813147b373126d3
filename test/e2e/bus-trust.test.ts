import { expect } from 'chai';
import { startGateway, eventually, type GatewayProcess } from '../support/gateway-process';
import { AMQP_URL } from '../support/env';
import { http, httpAs } from '../support/http';
import { roguePublisher, rogueContract, type RoguePublisher } from '../support/rogue';

const admin = httpAs(['admin:all', 'users:read']);

/**
 * What a publisher with nothing but the broker's address and the default credentials can no longer do to a gateway
 * running the reference services (the attacks of the security review, each through the real RabbitMQ).
 */
describe('trust on the bus: a rogue publisher with the default credentials', function () {
  this.timeout(60_000);
  let gw: GatewayProcess;
  let rogue: RoguePublisher;
  const announce = (service: string, contracts: unknown[], extra: Record<string, unknown> = {}) =>
    rogue.publish(`announce.${service}`, {
      service,
      instanceId: `${service}-rogue`,
      ttlMs: 60_000,
      contracts,
      ...extra,
    });
  const refused = async () =>
    (await admin('GET', `${gw.baseUrl}/api/discovery/contracts`)).body.conflicts.refused as Array<
      Record<string, string>
    >;

  before(async () => {
    gw = await startGateway({ BUS_URL: AMQP_URL });
    rogue = await roguePublisher(AMQP_URL, gw.prefix);
  });
  after(async () => {
    await rogue?.close();
    await gw?.stop();
  });

  it('says once at start, in one line, that it runs on a shared credential and announcements are unauthenticated', () => {
    const lines = gw
      .output()
      .split('\n')
      .filter((l) => /announcements are unauthenticated|shared credential/.test(l));
    expect(lines).to.have.length(1);
    expect(lines[0])
      .to.include('the gateway connects as guest, a shared credential')
      .and.include('docs/operations.md, "Trust on the bus"');
  });

  it('cannot make GET /api/users public under another service name, whatever its sort order', async () => {
    await announce('rogue-service', [rogueContract('ListUsersQuery', 'rogue-service', { public: true })]);
    const refusal = await eventually(async () => {
      const found = (await refused()).find((r) => r.service === 'rogue-service' && r.messageType === 'ListUsersQuery');
      expect(found).to.not.equal(undefined);
      return found;
    });
    expect(refusal).to.deep.equal({
      service: 'rogue-service',
      messageType: 'ListUsersQuery',
      reason: 'message type is held by users-service',
      holder: 'users-service',
    });
    expect((await http('GET', `${gw.baseUrl}/api/users`)).status).to.equal(401);
    const listed = await admin('GET', `${gw.baseUrl}/api/users`);
    expect(listed.status).to.equal(200);
    expect(gw.output()).to.include('refused ListUsersQuery from rogue-service: message type is held by users-service');
  });

  it('cannot take POST /api/login with another message type', async () => {
    await announce('aaa-service', [
      rogueContract('AaaStealCommand', 'aaa-service', { http: { method: 'POST', paths: ['/api/login'] } }),
    ]);
    await eventually(async () => expect((await refused()).map((r) => r.messageType)).to.include('AaaStealCommand'));
    const login = await http('POST', `${gw.baseUrl}/api/login`, {
      body: { email: 'nobody@example.com', password: 'wrong-password' },
    });
    expect(login.status).to.equal(401); // the auth service answered, not the rogue
  });

  it('cannot declare http.paths outside /api/', async () => {
    await announce('outside-service', [
      rogueContract('OutsideCommand', 'outside-service', { http: { method: 'GET', paths: ['/outside'] } }),
      rogueContract('CatchAllCommand', 'outside-service', { http: { method: 'GET', paths: ['/*'] } }),
    ]);
    await eventually(async () =>
      expect((await refused()).filter((r) => r.service === 'outside-service')).to.have.length(2),
    );
    expect(gw.gatewayConfig()).to.not.include('/outside');
  });

  it('drops an announcement over announcementMaxBytes unparsed, logging the sender and the limit', async () => {
    const big = {
      service: 'big-service',
      instanceId: 'b1',
      ttlMs: 60_000,
      contracts: [rogueContract('BigCommand', 'big-service', { inputSchema: { description: 'x'.repeat(300_000) } })],
    };
    await rogue.publish('announce.big-service', big);
    await eventually(async () =>
      expect(gw.output()).to.match(
        /dropped an announcement \(routing key announce\.big-service\): \d+ bytes, over 262144 \(announcementMaxBytes\)/,
      ),
    );
  });

  it('drops an announcement whose service is not the one of its routing key', async () => {
    await rogue.publish('announce.rogue-service', { service: 'users-service', instanceId: 'x', withdrawn: true });
    await eventually(async () =>
      expect(gw.output()).to.include(
        'dropped an announcement (routing key announce.rogue-service): service users-service does not match the routing key',
      ),
    );
    expect((await admin('GET', `${gw.baseUrl}/api/users`)).status).to.equal(200);
  });

  it('accepts a minimal withdrawal (service, instanceId, withdrawn) on the routing key of its own service', async () => {
    await rogue.publish('announce.temp-service', {
      service: 'temp-service',
      instanceId: 't1',
      ttlMs: 60_000,
      contracts: [rogueContract('ListTempsQuery', 'temp-service')],
    });
    const served = async () =>
      (
        (await admin('GET', `${gw.baseUrl}/api/discovery/contracts`)).body.contracts as Array<{ messageType: string }>
      ).some((c) => c.messageType === 'ListTempsQuery');
    await eventually(async () => expect(await served()).to.equal(true));
    await rogue.publish('announce.users-service', { service: 'temp-service', instanceId: 't1', withdrawn: true }); // another service's key
    await rogue.publish('announce.temp-service', { service: 'temp-service', instanceId: 't1', withdrawn: true });
    await eventually(async () => expect(await served()).to.equal(false));
    expect(gw.output()).to.include(
      'dropped an announcement (routing key announce.users-service): service temp-service does not match the routing key',
    );
  });

  it('logs each kind of malformed announcement with its reason', async () => {
    await rogue.publish('announce.junk-service', Buffer.from('{not json'));
    await rogue.publish('announce.junk-service', [1, 2]);
    await rogue.publish('announce.junk-service', { instanceId: 'x' });
    await rogue.publish('announce.junk-service', {
      service: 'junk-service',
      instanceId: 'j1',
      ttlMs: 'soon',
      contracts: [],
    });
    await eventually(async () => {
      const out = gw.output();
      expect(out).to.include('dropped an announcement (routing key announce.junk-service): not JSON');
      expect(out).to.include('dropped an announcement (routing key announce.junk-service): not a JSON object');
      expect(out).to.include('dropped an announcement (routing key announce.junk-service): no service');
      expect(out).to.include('refused announcement from service junk-service instance j1: ttlMs must be a number');
    });
  });
});
