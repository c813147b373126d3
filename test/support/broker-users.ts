import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import * as amqp from 'amqplib';
import { AmqpTransport } from '../../plugin/bus/amqp';
import { envName } from '../../plugin/cli/contracts-broker-definitions';
import { type HandlerContext, type RunningService, serve } from '../../sdk';

const exec = promisify(execFile);
const HOST = '127.0.0.1:5672';
const DEFINITIONS_COMMAND = join(__dirname, '..', '..', 'plugin', 'cli', 'contracts-broker-definitions.js');

/**
 * The broker users made and not deleted yet, and their folders. A test removes its own in after(); what a failed
 * hook left behind (an after() that threw before its remove(), a before() that timed out while rabbitmqctl still
 * imported) is deleted at the end of the run, so no run leaves a broker user behind.
 */
const live = { users: new Set<string>(), dirs: new Set<string>(), vhosts: new Set<string>() };

async function deleteUser(name: string): Promise<void> {
  live.users.delete(name);
  await exec('rabbitmqctl', ['delete_user', name]).catch(() => undefined);
}

async function deleteVhost(name: string): Promise<void> {
  live.vhosts.delete(name);
  await exec('rabbitmqctl', ['delete_vhost', name]).catch(() => undefined);
}

function removeDir(dir: string): void {
  live.dirs.delete(dir);
  rmSync(dir, { recursive: true, force: true });
}

if (typeof after === 'function') {
  after(async () => {
    for (const name of [...live.users]) await deleteUser(name);
    for (const name of [...live.vhosts]) await deleteVhost(name);
    for (const dir of [...live.dirs]) removeDir(dir);
  });
}

/**
 * What the definitions declared for each service and outlives its users (durable): its work queue and its own
 * exchanges, deleted as the guest user.
 */
async function deleteServiceTopology(prefix: string, services: readonly string[]): Promise<void> {
  const conn = await amqp.connect(`amqp://guest:guest@${HOST}`).catch(() => undefined);
  if (!conn) return;
  conn.on('error', () => undefined);
  try {
    const ch = await conn.createChannel();
    for (const service of services) {
      await ch.deleteQueue(`${prefix}.svc.${service}`);
      await ch.deleteExchange(`${prefix}.announcements.${service}`);
      await ch.deleteExchange(`${prefix}.replies.${service}`);
    }
  } catch {
    // the connection went away: what is left has no user any more and no consumer
  } finally {
    await conn.close().catch(() => undefined);
  }
}

/**
 * Per-service broker users on the real RabbitMQ, from the generated definitions (`rabbitmqctl import_definitions`),
 * each named `<prefix>-<name>` so runs never meet; remove() deletes them.
 */
export interface BrokerUsers {
  /** The broker user of `name` (`gateway`, or a service). */
  user(name: string): string;
  /** Its amqp:// URL with its password (and the vhost of the run, when it has one). */
  url(name: string): string;
  /** guest's URL to the same vhost (the broker's administrator here; production deletes guest). */
  guestUrl: string;
  /** The vhost the definitions went to: `/`, or one of the run's own. */
  vhost: string;
  /** The services file the users were made from (when the services were given with their message types). */
  servicesFile?: string;
  /**
   * What a gateway on these users is started with: its user, the prefix, no reference services (they would use the
   * gateway's user), and who may announce for which service: the services file, else ANNOUNCEMENT_USERS.
   */
  gatewayEnv(): Record<string, string>;
  /** Deletes the users and the run's vhost (call it in after(); on a failed hook it runs at the end of the run anyway). */
  remove(): Promise<void>;
}

/** A services file entry beyond its message types: what the service may also declare. */
export interface ServiceEntry {
  messageTypes: readonly string[];
  public?: boolean;
  httpPaths?: boolean;
}

function isServiceEntry(entry: readonly string[] | ServiceEntry): entry is ServiceEntry {
  return !Array.isArray(entry);
}

/**
 * Makes the broker users of `services` the documented way: a list of service names (`--service`, users named
 * `<prefix>-<service>` by `--user-prefix`), or each service with the message types a services file gives it: the
 * file is written (`servicesFile`, for the gateway's BUS_SERVICES_FILE too) and the definitions are made from it
 * (`--services FILE`). `extraArgs` go to the definitions tool (`--legacy-replies`); making the same users again
 * re-imports their permissions. As docs/operations.md says: the command writes the file (mode 0600), and rabbitmqctl,
 * which runs as the broker's user, reads it from its standard input. With `ownVhost` the definitions, their caps
 * included, go to a vhost named `prefix` (guest may use it too), deleted by remove(); without, to `/`, which runs
 * side by side share: there the caps are left out (`--no-caps`), as their vhost-wide policies and limits would reach
 * the other runs.
 */
export async function createBrokerUsers(
  prefix: string,
  services: readonly string[] | Readonly<Record<string, readonly string[] | ServiceEntry>>,
  extraArgs: string[] = [],
  options: { ownVhost?: boolean } = {},
): Promise<BrokerUsers> {
  const serviceNames = Array.isArray(services) ? [...services] : Object.keys(services);
  const names = ['gateway', ...serviceNames];
  const user = (name: string) => `${prefix}-${name}`;
  const password = (name: string) => `${name}-pw-0123456789`;
  const vhost = options.ownVhost ? prefix : '/';
  const path = options.ownVhost ? `/${encodeURIComponent(vhost)}` : '';
  const url = (name: string) => `amqp://${encodeURIComponent(user(name))}:${password(name)}@${HOST}${path}`;
  const env: NodeJS.ProcessEnv = {};
  for (const name of names) env[envName(user(name))] = password(name);
  const dir = mkdtempSync(join(tmpdir(), 'broker-users-'));
  live.dirs.add(dir);
  for (const name of names) live.users.add(user(name));
  if (options.ownVhost) live.vhosts.add(vhost);
  let servicesFile: string | undefined;
  let importing: Promise<unknown> = Promise.resolve();
  const remove = async (): Promise<void> => {
    await importing.catch(() => undefined);
    for (const name of names) await deleteUser(user(name));
    if (options.ownVhost) await deleteVhost(vhost);
    else await deleteServiceTopology(prefix, serviceNames);
    removeDir(dir);
  };
  try {
    let source: string[];
    if (Array.isArray(services)) {
      source = ['--user-prefix', `${prefix}-`, ...serviceNames.flatMap((s) => ['--service', s])];
    } else {
      servicesFile = join(dir, 'services.yml');
      const entries = Object.fromEntries(
        Object.entries(services as Record<string, readonly string[] | ServiceEntry>).map(([s, entry]) => [
          s,
          { user: user(s), ...(isServiceEntry(entry) ? entry : { messageTypes: entry }) },
        ]),
      );
      writeFileSync(servicesFile, JSON.stringify({ services: entries }, null, 2)); // JSON is YAML
      source = ['--services', servicesFile];
    }
    const file = join(dir, 'definitions.json');
    await exec(
      process.execPath,
      [
        DEFINITIONS_COMMAND,
        '--prefix',
        prefix,
        '--gateway-user',
        user('gateway'),
        ...(options.ownVhost ? ['--vhost', vhost] : ['--no-caps']),
        ...source,
        ...extraArgs,
        '--out',
        file,
      ],
      { env: { ...process.env, ...env } },
    );
    importing = exec('sh', ['-c', 'rabbitmqctl import_definitions < "$1"', 'sh', file]).then(() =>
      options.ownVhost ? exec('rabbitmqctl', ['set_permissions', '-p', vhost, 'guest', '.*', '.*', '.*']) : undefined,
    );
    await importing;
  } catch (err) {
    await remove();
    throw err;
  }
  const announcers: Record<string, string> =
    servicesFile !== undefined
      ? { BUS_SERVICES_FILE: servicesFile }
      : { REQUIRE_ANNOUNCEMENT_USER: 'true', ANNOUNCEMENT_USERS: serviceNames.map((s) => `${s}=${user(s)}`).join(',') };
  return {
    user,
    url,
    guestUrl: `amqp://guest:guest@${HOST}${path}`,
    vhost,
    servicesFile,
    gatewayEnv: () => ({
      BUS_URL: url('gateway'),
      BUS_PREFIX: prefix,
      START_REFERENCE_SERVICES: 'false',
      ...announcers,
    }),
    remove,
  };
}

/** rabbitmqctl's output, against the machine's broker. */
export function rabbitmqctl(args: string[]): Promise<string> {
  // The callback form: the leak check wraps execFile, and a wrapped execFile promisifies to stdout alone.
  return new Promise<string>((resolve, reject) =>
    execFile('rabbitmqctl', args, (err, out) => (err ? reject(err) : resolve(String(out)))),
  );
}

/** Closes every connection of broker user `user` as an operator would; how many it had. */
export async function closeConnectionsOf(user: string): Promise<number> {
  const ctl = rabbitmqctl;
  const rows = JSON.parse(await ctl(['list_connections', 'user', '--formatter', 'json'])) as Array<{ user: string }>;
  await ctl(['close_all_user_connections', user, 'test: reconnect']);
  return rows.filter((r) => r.user === user).length;
}

/** The broker refuses an operation by closing the channel; resolves to the broker's reason, or 'allowed'. */
export async function refusal(url: string, action: (ch: amqp.ConfirmChannel) => Promise<unknown>): Promise<string> {
  const conn = await amqp.connect(url);
  try {
    const ch = await conn.createConfirmChannel();
    const closed = new Promise<string>((resolve) => ch.on('error', (err: Error) => resolve(err.message)));
    const outcome = await Promise.race([
      action(ch)
        .then(() => new Promise((r) => setTimeout(r, 500)))
        .then(
          () => 'allowed',
          (err: Error) => err.message,
        ),
      closed,
    ]);
    return outcome === 'allowed' ? 'allowed' : await Promise.race([closed, Promise.resolve(outcome)]);
  } finally {
    await conn.close().catch(() => undefined);
  }
}

/**
 * A broker user `<prefix>-foreign` that may publish to the default exchange only (as a shared credential or a
 * service still on --legacy-replies may): straight into any work queue, as the conformance kit's foreign sender.
 */
export async function createDefaultExchangeUser(prefix: string): Promise<{ url: string; remove(): Promise<void> }> {
  const name = `${prefix}-foreign`;
  const password = 'foreign-pw-0123456789';
  const remove = (): Promise<void> => deleteUser(name);
  live.users.add(name);
  try {
    await exec('rabbitmqctl', ['add_user', name, password]);
    await exec('rabbitmqctl', ['set_permissions', '-p', '/', name, '^$', '^amq\\.default$', '^$']);
  } catch (err) {
    await remove();
    throw err;
  }
  return { url: `amqp://${encodeURIComponent(name)}:${password}@${HOST}`, remove };
}

/**
 * notes-service on its own broker user (`users.url('notes-service')`), taking requests from the gateway's user only:
 * `ListNotesQuery` (GET /api/notes) answered by `handle`. Stop it with stop(), which also closes its connection.
 */
export async function serveNotes(
  users: BrokerUsers,
  prefix: string,
  handle: (ctx: HandlerContext) => unknown,
): Promise<{ stop(): Promise<void> }> {
  const transport = new AmqpTransport(users.url('notes-service'), { prefix });
  let service: RunningService | undefined;
  const stop = async () => {
    await service?.stop().catch(() => undefined);
    await transport.close().catch(() => undefined);
  };
  try {
    await transport.start();
    service = await serve({
      transport,
      service: 'notes-service',
      acceptRequestsFrom: users.user('gateway'),
      operations: [
        {
          contract: {
            messageType: 'ListNotesQuery',
            inputSchema: { type: 'object' },
            outputSchema: { type: 'array' },
            requiredPermissions: [],
          },
          handle: (_input, ctx) => handle(ctx),
        },
      ],
    });
  } catch (err) {
    await stop();
    throw err;
  }
  return { stop };
}
