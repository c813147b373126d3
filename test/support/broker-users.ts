import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import * as amqp from 'amqplib';
import { run as brokerDefinitions } from '../../plugin/cli/contracts-broker-definitions';

const exec = promisify(execFile);
const HOST = '127.0.0.1:5672';

/**
 * Per-service broker users on the real RabbitMQ, from the generated definitions (`rabbitmqctl import_definitions`),
 * each named `<prefix>-<name>` so runs never meet; remove() deletes them. `extraArgs` go to the definitions tool
 * (`--legacy-replies`); making the same users again re-imports their permissions.
 */
export interface BrokerUsers {
  /** The broker user of `name` (`gateway`, or a service). */
  user(name: string): string;
  /** Its amqp:// URL with its password. */
  url(name: string): string;
  remove(): Promise<void>;
}

export async function createBrokerUsers(prefix: string, services: string[], extraArgs: string[] = []): Promise<BrokerUsers> {
  const names = ['gateway', ...services];
  const user = (name: string) => `${prefix}-${name}`;
  const password = (name: string) => `${name}-pw-0123456789`;
  const env: NodeJS.ProcessEnv = {};
  for (const name of names) env[`BROKER_PASSWORD_${user(name).toUpperCase().replace(/[^A-Z0-9]/g, '_')}`] = password(name);
  const definitions = brokerDefinitions(['--prefix', prefix, '--gateway-user', user('gateway'), '--user-prefix', `${prefix}-`, ...services.flatMap((s) => ['--service', s]), ...extraArgs], env);
  // rabbitmqctl runs as the broker's user here, so the file (hashes only, no passwords) is made readable to it.
  const dir = mkdtempSync(join(tmpdir(), 'broker-defs-'));
  const remove = async (): Promise<void> => {
    for (const name of names) await exec('rabbitmqctl', ['delete_user', user(name)]).catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const file = join(dir, 'definitions.json');
    writeFileSync(file, definitions, { mode: 0o644 });
    chmodSync(dir, 0o755);
    await exec('rabbitmqctl', ['import_definitions', file]);
  } catch (err) {
    await remove();
    throw err;
  }
  return { user, url: (name) => `amqp://${encodeURIComponent(user(name))}:${password(name)}@${HOST}`, remove };
}

/** Closes every connection of broker user `user` as an operator would; how many it had. */
export async function closeConnectionsOf(user: string): Promise<number> {
  // The callback form: the leak check wraps execFile, and a wrapped execFile promisifies to stdout alone.
  const ctl = (args: string[]) => new Promise<string>((resolve, reject) => execFile('rabbitmqctl', args, (err, out) => (err ? reject(err) : resolve(String(out)))));
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
    const outcome = await Promise.race([action(ch).then(() => new Promise((r) => setTimeout(r, 500))).then(() => 'allowed', (err: Error) => err.message), closed]);
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
  const remove = async (): Promise<void> => {
    await exec('rabbitmqctl', ['delete_user', name]).catch(() => undefined);
  };
  try {
    await exec('rabbitmqctl', ['add_user', name, password]);
    await exec('rabbitmqctl', ['set_permissions', '-p', '/', name, '^$', '^amq\\.default$', '^$']);
  } catch (err) {
    await remove();
    throw err;
  }
  return { url: `amqp://${encodeURIComponent(name)}:${password}@${HOST}`, remove };
}
