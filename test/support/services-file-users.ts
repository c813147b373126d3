import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { envName, run as brokerDefinitions } from '../../plugin/cli/contracts-broker-definitions';

const exec = promisify(execFile);
const HOST = '127.0.0.1:5672';

export interface BrokerUsers {
  /** The services file the definitions were made from; the gateway reads it too (BUS_SERVICES_FILE). */
  servicesFile: string;
  /** amqp:// URL of a broker user (its name as in the services file, or the gateway user). */
  url(user: string): string;
  /** Deletes the users (on every path: call it in after()). */
  remove(): Promise<void>;
}

/**
 * Broker users made the documented way: a services file, `contracts-broker-definitions --services FILE`, and
 * `rabbitmqctl import_definitions`. Every user gets a password of its own; `remove` deletes them. rabbitmqctl runs
 * as the broker's user here, so the definitions file (hashes only) is made readable to it.
 */
export async function createServicesFileUsers(prefix: string, gatewayUser: string, servicesYaml: string, users: readonly string[]): Promise<BrokerUsers> {
  const dir = mkdtempSync(join(tmpdir(), 'broker-users-'));
  const servicesFile = join(dir, 'services.yml');
  writeFileSync(servicesFile, servicesYaml);
  const passwords = new Map([gatewayUser, ...users].map((u) => [u, `${u}-pw-${Math.random().toString(36).slice(2)}`]));
  const env: NodeJS.ProcessEnv = {};
  for (const [user, pw] of passwords) env[envName(user)] = pw;
  const remove = async (): Promise<void> => {
    for (const user of passwords.keys()) await exec('rabbitmqctl', ['delete_user', user]).catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const file = join(dir, 'definitions.json');
    writeFileSync(file, brokerDefinitions(['--prefix', prefix, '--gateway-user', gatewayUser, '--services', servicesFile], env), { mode: 0o644 });
    chmodSync(dir, 0o755);
    await exec('rabbitmqctl', ['import_definitions', file]);
  } catch (err) {
    await remove();
    throw err;
  }
  return {
    servicesFile,
    url: (user) => `amqp://${encodeURIComponent(user)}:${encodeURIComponent(passwords.get(user) ?? '')}@${HOST}`,
    remove,
  };
}
