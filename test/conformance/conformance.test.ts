import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import * as amqp from 'amqplib';
import { runConformance } from '../../plugin/conformance';
import { createBrokerUsers, createDefaultExchangeUser, type BrokerUsers } from '../support/broker-users';
import { deleteBusTopology, deleteWorkQueues } from '../support/broker';
import { AMQP_URL, uniquePrefix } from '../support/env';
import { eventually } from '../support/gateway-process';
import { createTestDatabase, type TestDatabase } from '../support/databases';
import { startScriptProcess, startServiceProcess, type ServiceProcess } from '../support/service-process';
import { TEST_JWT_SECRET } from '../support/tokens';

const ROOT = resolve(__dirname, '..', '..', '..');
/** Debian's python3, where python3-pika is installed (.ci/run), rather than whatever python3 is first on PATH. */
const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';

const EVERY_RULE = [
  'announces its contracts on a discovery request',
  'announces valid contracts with a lease',
  'answers with the reply envelope',
  'honours the deadline',
  'answers a second delivery of the same request',
  'answers a redelivered request',
  'drops a request from another broker user',
  'renews its lease',
  'withdraws on stop',
  'deletes its work queue on stop',
];

/** examples/python/service.py as its own process; resolves once it prints `ready`. */
async function startPython(env: Record<string, string>): Promise<ServiceProcess> {
  let out = '';
  const child = spawn(PYTHON, [join(ROOT, 'examples', 'python', 'service.py')], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const killer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(killer);
  };
  await eventually(async () => {
    if (child.exitCode !== null) throw new Error(`service.py exited:\n${out}`);
    if (!out.includes('ready')) throw new Error(`service.py not ready:\n${out}`);
  }, 15000).catch(async (err) => {
    child.kill('SIGKILL');
    await exited;
    throw err;
  });
  return { child, exited, output: () => out, stop };
}

/** The kit's lines and exit status. */
async function conformance(args: string[]): Promise<{ code: number; lines: string[] }> {
  const lines: string[] = [];
  const code = await runConformance(args, (l) => lines.push(l));
  return { code, lines };
}

/** The rule names with this mark (`pass`, `FAIL`, `skip`). */
const marked = (lines: string[], mark: string) =>
  lines.filter((l) => l.startsWith(`${mark}  `)).map((l) => l.slice(mark.length + 2).replace(/:.*$/, ''));

describe('contracts-gateway conformance (a running service over the real bus)', function () {
  this.timeout(180_000);
  const prefix = uniquePrefix('conform');
  let users: BrokerUsers | undefined;
  let foreign: { url: string; remove(): Promise<void> } | undefined;
  const started: ServiceProcess[] = [];
  let database: TestDatabase | undefined;
  const services = ['catalog-service', 'nap-service', 'bad-service', 'rogue-service'];

  before(async () => {
    users = await createBrokerUsers(prefix, services);
    foreign = await createDefaultExchangeUser(prefix);
    // The exchanges, declared by the gateway's user as the gateway would: per-service users may not.
    const model = await amqp.connect(users.url('gateway'));
    try {
      const ch = await model.createChannel();
      await ch.assertExchange(`${prefix}.requests`, 'topic', { durable: true });
      await ch.assertExchange(`${prefix}.discovery`, 'topic', { durable: true });
    } finally {
      await model.close();
    }
  });

  afterEach(async () => {
    for (const s of started.splice(0)) await s.stop();
  });

  after(async () => {
    await deleteWorkQueues(AMQP_URL, prefix, [...services, 'users-service', 'auth-service']).catch(() => undefined);
    await deleteBusTopology(AMQP_URL, prefix).catch(() => undefined);
    await users?.remove();
    await foreign?.remove();
    await database?.drop();
  });

  /**
   * Under per-service users the definitions declare the work queue and the service's user may not delete it: the
   * rule is skipped there (the shared-credential run below checks it).
   */
  const DEFINITIONS_QUEUE_RULE = 'deletes its work queue on stop';

  /** The kit's arguments; the service's own user is its per-service one unless the shared credential is given. */
  const kit = (service: string, pid?: number, bus = users!.url('gateway'), serviceBus = users!.url(service)) => [
    '--bus',
    bus,
    '--service',
    service,
    '--prefix',
    prefix,
    '--foreign-bus',
    foreign!.url,
    '--service-bus',
    serviceBus,
    ...(pid ? ['--pid', String(pid)] : []),
  ];

  it('the Python example (examples/python/service.py) passes every rule under per-service broker users', async () => {
    const svc = await startPython({
      BUS_URL: users!.url('catalog-service'),
      BUS_PREFIX: prefix,
      BUS_GATEWAY_USER: users!.user('gateway'),
    });
    started.push(svc);
    const { code, lines } = await conformance(kit('catalog-service', svc.child.pid));
    expect(marked(lines, 'pass'), `${lines.join('\n')}\n${svc.output()}`).to.deep.equal(EVERY_RULE.slice(0, -1));
    expect(marked(lines, 'skip')).to.deep.equal([DEFINITIONS_QUEUE_RULE]);
    expect(code).to.equal(0);
  });

  it('a Node service on the SDK passes every rule under per-service broker users', async () => {
    const svc = await startServiceProcess('nap-service', {
      BUS_URL: users!.url('nap-service'),
      BUS_PREFIX: prefix,
      BUS_GATEWAY_USER: users!.user('gateway'),
    });
    started.push(svc);
    const { code, lines } = await conformance(kit('nap-service', svc.child.pid));
    expect(marked(lines, 'pass'), `${lines.join('\n')}\n${svc.output()}`).to.deep.equal(EVERY_RULE.slice(0, -1));
    expect(marked(lines, 'skip')).to.deep.equal([DEFINITIONS_QUEUE_RULE]);
    expect(code).to.equal(0);
  });

  it('the reference services (users-service, auth-service in one process) pass every rule', async () => {
    database = await createTestDatabase('conform');
    // One process serves both with one broker user: the shared development credential, as in the quick start.
    const svc = await startScriptProcess(
      'scripts/reference-services',
      {
        BUS_URL: AMQP_URL,
        BUS_PREFIX: prefix,
        DATABASE_URL: database.url,
        JWT_SECRET: TEST_JWT_SECRET,
        ADMIN_PASSWORD: 'conformance-admin-pw',
      },
      60_000,
    );
    started.push(svc);
    const usersRun = await conformance(kit('users-service', undefined, AMQP_URL, AMQP_URL));
    expect(marked(usersRun.lines, 'pass'), usersRun.lines.join('\n')).to.deep.equal(EVERY_RULE.slice(0, -2));
    expect(marked(usersRun.lines, 'skip')).to.deep.equal(['withdraws on stop', 'deletes its work queue on stop']);
    expect(usersRun.code).to.equal(0);
    // SIGTERM stops both services of the process: the stop is checked on the second.
    const authRun = await conformance(kit('auth-service', svc.child.pid, AMQP_URL, AMQP_URL));
    expect(marked(authRun.lines, 'pass'), `${authRun.lines.join('\n')}\n${svc.output()}`).to.deep.equal(EVERY_RULE);
    expect(authRun.code).to.equal(0);
  });

  it('fails a service that breaks the protocol, naming each broken rule, and exits 1', async () => {
    const svc = await startServiceProcess('bad-service', { BUS_URL: users!.url('bad-service'), BUS_PREFIX: prefix });
    started.push(svc);
    const { code, lines } = await conformance(kit('bad-service', svc.child.pid));
    expect(code, lines.join('\n')).to.equal(1);
    // Every rule but the first: it does answer a discovery request.
    expect(marked(lines, 'pass'), lines.join('\n')).to.deep.equal(['announces its contracts on a discovery request']);
    expect(marked(lines, 'FAIL'), lines.join('\n')).to.deep.equal(EVERY_RULE.slice(1, -1));
    expect(marked(lines, 'skip')).to.deep.equal([DEFINITIONS_QUEUE_RULE]);
    expect(lines.join('\n')).to.include('targetService other-service');
  });

  it('exits 64 with its usage on missing arguments, and 2 when the bus cannot be reached', async () => {
    expect((await conformance(['--service', 'x'])).code).to.equal(64);
    const unreachable = await conformance(['--bus', 'amqp://nobody:secret@127.0.0.1:1', '--service', 'x']);
    expect(unreachable.code).to.equal(2);
    expect(unreachable.lines.join('\n')).not.to.include('secret');
  });
});
