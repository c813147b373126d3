#!/usr/bin/env node
/**
 * Writes the RabbitMQ definitions that give the gateway and each service a broker user of its own (see
 * docs/operations.md, "Trust on the bus"):
 *
 *   contracts-broker-definitions --prefix contracts --services services.yml \
 *     [--gateway-user gateway] [--vhost /] [--password-dir DIR [--generate-passwords]] [--queue-type classic|quorum]
 *     [--legacy-topology] [--legacy-replies] [--max-instances 32] [--max-gateways 8] [--no-caps] [--out FILE]
 *
 * The services file (plugin/bus/services-file.ts) names each service's broker user and what it owns; the gateway
 * reads the same file (busServicesFile). Without one, `--service users-service --service auth-service
 * [--user-prefix svc-]` names the services (users named like them, or prefixed), and the gateway pins nothing.
 *
 * Passwords: BROKER_PASSWORD_<USER> (upper case, other characters as _), else the file DIR/<user>; with
 * --generate-passwords a missing file is created with a random password (mode 0600). Only hashes are written.
 * --legacy-replies also lets services publish to the default exchange, as those from before the reply exchange
 * reply, and declare their discovery queue as P.discover.<uuid> (a name S could also give an exchange of its own,
 * bound to P.replies/P.discovery, to publish keys its topic permissions refuse): for an upgrade only, it gives every
 * service's credential the power to flood any queue (it implies --legacy-topology).
 * --legacy-topology also lets services declare their work queue, announce on P.discovery and reply on P.replies, as
 * those from before the per-service exchanges do: for an upgrade only, it gives every service's credential the
 * power to loop dead letters through P.discovery (a flood that alarms the whole node) and to reach other services'
 * announcement lanes. Without it the definitions declare each work queue (--queue-type, classic by default).
 * The caps (operator policies on the queues services may declare, user and vhost limits) make room for
 * --max-instances of each service and --max-gateways gateways at once; --no-caps leaves them out (a vhost shared
 * with other applications, which the vhost-wide ones would reach).
 * Import with `rabbitmqctl import_definitions < FILE` (rabbitmqctl reads a named file as the broker's user, and the
 * file is this user's only; or the broker's load_definitions). Installed as the package's
 * `contracts-broker-definitions` command; `node dist/scripts/broker-definitions.js` in this repository.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { brokerDefinitions, type CapsInput, DEFAULT_CAPS } from '../bus/broker-definitions';
import { workQueueTypeOf } from '../bus/amqp/wire';
import { readServicesFile } from '../bus/services-file';
import { errorMessage } from '../errors/describe';
import { asksForHelp } from './command';

const USAGE = `usage: contracts-broker-definitions [--prefix contracts] (--services FILE | --service NAME... [--user-prefix P])
    [--gateway-user gateway] [--vhost /] [--password-dir DIR [--generate-passwords]] [--queue-type classic|quorum]
    [--legacy-topology] [--legacy-replies] [--max-instances 32] [--max-gateways 8] [--no-caps] [--out FILE]
  Writes the RabbitMQ definitions that give the gateway and each service a broker user of its own (to --out, mode
  0600, or to stdout). Passwords: BROKER_PASSWORD_<USER>, else the file DIR/<user> (--generate-passwords creates a
  missing one); only hashes are written. Import: rabbitmqctl import_definitions < FILE
`;

interface Args {
  prefix: string;
  vhost: string;
  gatewayUser: string;
  services: string[];
  servicesFile?: string;
  userPrefix?: string;
  passwordDir?: string;
  generate: boolean;
  legacyReplies: boolean;
  legacyTopology: boolean;
  queueType: 'classic' | 'quorum';
  out?: string;
  caps: CapsInput | false;
}

/** A whole number from 1 given to `flag`. */
function count(flag: string, text: string): number {
  const n = Number(text);
  if (!/^[0-9]+$/.test(text) || n < 1 || !Number.isSafeInteger(n))
    throw new Error(`${flag} needs a whole number from 1`);
  return n;
}

export function parseArgs(argv: string[]): Args {
  const args: Args = {
    prefix: 'contracts',
    vhost: '/',
    gatewayUser: 'gateway',
    services: [],
    generate: false,
    legacyReplies: false,
    legacyTopology: false,
    queueType: 'classic',
    caps: { ...DEFAULT_CAPS },
  };
  let noCaps = false;
  for (let i = 0; i < argv.length; i += 1) {
    const flag = argv[i] as string;
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${flag} needs a value`);
      return v;
    };
    if (flag === '--prefix') args.prefix = value();
    else if (flag === '--vhost') args.vhost = value();
    else if (flag === '--gateway-user') args.gatewayUser = value();
    else if (flag === '--user-prefix') args.userPrefix = value();
    else if (flag === '--service') args.services.push(value());
    else if (flag === '--services') args.servicesFile = value();
    else if (flag === '--password-dir') args.passwordDir = value();
    else if (flag === '--generate-passwords') args.generate = true;
    else if (flag === '--legacy-replies') args.legacyReplies = true;
    else if (flag === '--legacy-topology') args.legacyTopology = true;
    else if (flag === '--queue-type') args.queueType = workQueueTypeOf(value());
    else if (flag === '--out') args.out = value();
    else if (flag === '--no-caps') noCaps = true;
    else if (flag === '--max-instances' && args.caps) args.caps.instances = count(flag, value());
    else if (flag === '--max-gateways' && args.caps) args.caps.gateways = count(flag, value());
    else throw new Error(`unknown argument ${flag}`);
  }
  if (args.servicesFile !== undefined) {
    // One list: the gateway reads the file alone, so users or services named beside it would differ from its view.
    if (args.services.length > 0 || args.userPrefix !== undefined)
      throw new Error('--services replaces --service and --user-prefix: name every service and its user in the file');
  } else if (args.services.length === 0) {
    throw new Error('name at least one --service, or a --services file');
  }
  if (noCaps) {
    if (argv.some((a) => a === '--max-instances' || a === '--max-gateways'))
      throw new Error('--no-caps leaves the caps out: --max-instances and --max-gateways size them');
    args.caps = false;
  }
  if (args.generate && !args.passwordDir) throw new Error('--generate-passwords needs --password-dir');
  return args;
}

export function envName(user: string): string {
  return `BROKER_PASSWORD_${user.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;
}

function password(user: string, args: Args, env: NodeJS.ProcessEnv): string | undefined {
  const fromEnv = env[envName(user)];
  if (fromEnv) return fromEnv;
  if (!args.passwordDir) return undefined;
  const file = join(args.passwordDir, user);
  if (!existsSync(file) && args.generate) {
    mkdirSync(args.passwordDir, { recursive: true, mode: 0o700 });
    writeFileSync(file, `${randomBytes(24).toString('base64url')}\n`, { mode: 0o600 });
  }
  return existsSync(file) ? readFileSync(file, 'utf8').trim() || undefined : undefined;
}

export function run(argv: string[], env: NodeJS.ProcessEnv = process.env): string {
  const args = parseArgs(argv);
  const services =
    args.servicesFile !== undefined
      ? Object.fromEntries(
          Object.entries(readServicesFile(args.servicesFile)).map(([service, entry]) => [service, entry.user]),
        )
      : Object.fromEntries(args.services.map((s) => [s, `${args.userPrefix ?? ''}${s}`]));
  const users = [args.gatewayUser, ...Object.values(services)];
  const passwords: Record<string, string> = {};
  for (const user of users) {
    const p = password(user, args, env);
    if (p === undefined)
      throw new Error(
        `no password for broker user ${user}: set ${envName(user)}${args.passwordDir ? ` or write ${join(args.passwordDir, user)}` : ' or use --password-dir'}`,
      );
    passwords[user] = p;
  }
  const definitions = brokerDefinitions({
    prefix: args.prefix,
    vhost: args.vhost,
    gatewayUser: args.gatewayUser,
    services,
    passwords,
    legacyReplies: args.legacyReplies,
    legacyTopology: args.legacyTopology,
    queueType: args.queueType,
    caps: args.caps,
  });
  return `${JSON.stringify(definitions, null, 2)}\n`;
}

/** The command: arguments from the process, definitions to --out or stdout, exit 2 with one line on a problem. */
export function main(): void {
  const argv = process.argv.slice(2);
  if (asksForHelp(argv)) {
    process.stdout.write(USAGE);
    return;
  }
  try {
    const text = run(argv);
    const out = parseArgs(argv).out;
    if (out) writeFileSync(out, text, { mode: 0o600 });
    else process.stdout.write(text);
  } catch (err) {
    process.stderr.write(`broker-definitions: ${errorMessage(err)} (--help prints the usage)\n`);
    process.exit(2);
  }
}

if (require.main === module) main();
