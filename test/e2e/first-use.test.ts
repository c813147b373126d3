import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGateway, eventually, type GatewayProcess } from '../support/gateway-process';
import { AMQP_URL } from '../support/env';
import { http, httpAs } from '../support/http';
import { ROOT, run } from '../packaging/support';
import { AmqpTransport } from '../../plugin/bus/amqp';
import { serve, type RunningService } from '../../sdk';

const admin = httpAs(['admin:all']);
const CLI = join(ROOT, 'dist', 'plugin', 'cli', 'contracts-gateway.js');

/** A login contract as auth-service (or a rogue copying it) announces it: public, on POST /api/login. */
const login = {
  messageType: 'AuthenticateCommand',
  http: { method: 'POST' as const, paths: ['/api/login'] },
  public: true,
  requiredPermissions: [],
  inputSchema: { type: 'object', properties: { password: { type: 'string' } }, required: ['password'] },
  outputSchema: { type: 'object' },
};

/**
 * The no-file set-up (a shared credential, no services file): a rogue announcing AuthenticateCommand while
 * auth-service restarts gets no login request, before and after a gateway restart; the restarted auth-service is
 * served at once; `contracts-gateway release-pin` hands the type over.
 */
describe('trust on first use without a services file', function () {
  this.timeout(120_000);
  const configDir = mkdtempSync(join(tmpdir(), 'first-use-gw-'));
  const dataDir = join(configDir, 'data');
  let gw: GatewayProcess | undefined;
  const running: Array<{ transport: AmqpTransport; service?: RunningService }> = [];
  const passwordsSeenByRogue: string[] = [];

  /** Starts `service` announcing the login contract over its own connection; stop() withdraws it. */
  async function start(service: string, answer: (password: string) => unknown): Promise<() => Promise<void>> {
    const transport = new AmqpTransport(AMQP_URL, { prefix: gw!.prefix });
    const entry: { transport: AmqpTransport; service?: RunningService } = { transport };
    running.push(entry);
    await transport.start();
    entry.service = await serve({
      transport,
      service,
      operations: [{ contract: login, handle: (input) => answer((input as { password: string }).password) }],
    });
    return async () => {
      await entry.service?.stop();
      await transport.close();
      running.splice(running.indexOf(entry), 1);
    };
  }
  const auth = () => start('auth-service', () => ({ who: 'auth-service' }));
  const rogue = () =>
    start('rogue-service', (password) => {
      passwordsSeenByRogue.push(password);
      return { who: 'rogue-service' };
    });
  /** No route for it (404, or 401 from the generic routes), and never the rogue's answer. */
  const expectNotRogue = async () => {
    const res = await tryLogin();
    expect(res.status).to.not.equal(200);
    expect(passwordsSeenByRogue).to.deep.equal([]);
  };
  const tryLogin = () => http('POST', `${gw!.baseUrl}/api/login`, { body: { password: 'secret-password' } });
  const refused = async () =>
    (await admin('GET', `${gw!.baseUrl}/api/discovery/contracts`)).body.conflicts.refused as Array<
      Record<string, string>
    >;
  const startGw = async () => {
    gw = await startGateway(
      { BUS_URL: AMQP_URL, START_REFERENCE_SERVICES: 'false', BUS_PREFIX: gw?.prefix },
      { configDir },
    );
  };

  before(startGw);
  after(async () => {
    for (const entry of [...running].reverse()) {
      await entry.service?.stop().catch(() => undefined);
      await entry.transport.close().catch(() => undefined);
    }
    await gw?.stop().catch(() => undefined);
    rmSync(configDir, { recursive: true, force: true });
  });

  it('keeps /api/login for auth-service while it restarts, and across a gateway restart', async () => {
    let stopAuth = await auth();
    await eventually(async () => expect((await tryLogin()).body).to.deep.equal({ who: 'auth-service' }), 15_000);

    // auth-service restarts; the rogue announces the same type meanwhile and keeps announcing.
    await stopAuth();
    const stopRogue = await rogue();
    await eventually(async () =>
      expect(await refused()).to.deep.include({
        service: 'rogue-service',
        messageType: 'AuthenticateCommand',
        reason: 'message type is pinned to auth-service by first use',
        holder: 'auth-service',
      }),
    );
    await expectNotRogue();
    expect(gw!.output()).to.include(
      'refused AuthenticateCommand from rogue-service: message type is pinned to auth-service by first use',
    );
    stopAuth = await auth();
    await eventually(async () => expect((await tryLogin()).body).to.deep.equal({ who: 'auth-service' }), 15_000);

    // The gateway restarts with the same data folder while auth-service is away: the rogue is refused again.
    await stopAuth();
    await gw!.stop();
    await startGw();
    await eventually(
      async () =>
        expect((await refused()).map((r) => r.reason)).to.include(
          'message type is pinned to auth-service by first use',
        ),
      20_000,
    );
    await expectNotRogue();
    expect(passwordsSeenByRogue).to.deep.equal([]);

    // Released by the command, the type goes to the service claiming it (the rogue, here: the operator's choice).
    const help = await run(process.execPath, [CLI, 'release-pin', '--help']);
    expect(help.code).to.equal(0);
    expect(help.output).to.include('usage: contracts-gateway release-pin');
    const released = await run(process.execPath, [CLI, 'release-pin', 'AuthenticateCommand', '--data-dir', dataDir]);
    expect(released.code, released.output).to.equal(0);
    expect(released.output).to.include('released AuthenticateCommand (was pinned to auth-service)');
    await eventually(async () => expect((await tryLogin()).body).to.deep.equal({ who: 'rogue-service' }), 15_000);
    const again = await run(process.execPath, [CLI, 'release-pin', 'NoSuchQuery', '--data-dir', dataDir]);
    expect(again.code).to.equal(1);
    expect(again.output).to.include('not pinned: NoSuchQuery');
    await stopRogue();
  });
});
