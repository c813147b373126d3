import { parseArgs } from 'node:util';
import { DEFAULT_BUS_PREFIX } from '../bus';
import { redactBusUrl } from '../bus/amqp/broker-list';
import { errorMessage } from '../errors/describe';
import { ConformanceBus } from './bus';
import { checkService, type Outcome } from './rules';
import { EXIT_FAILED, EXIT_INPUT, EXIT_USAGE } from '../cli/command';

export const CONFORMANCE_USAGE =
  'conformance --bus <amqp url> --service <name> [--prefix <P>] [--foreign-bus <amqp url>] [--service-bus <amqp url>] [--pid <pid>] [--max-lease-ms <ms>]';
export const CONFORMANCE_HELP = `usage: contracts-gateway ${CONFORMANCE_USAGE}
  Checks a running service over the bus against docs/bus-protocol.md, one line per rule; exits 1 on a failure.
  --bus          the gateway's broker user (the kit publishes requests as the gateway does)
  --foreign-bus  another broker user allowed to publish to the default exchange: its requests must be dropped
  --service-bus  the service's own broker user: the kit takes a request off its queue and gives it back, redelivered
  --pid          the service's process: sent SIGTERM at the end, to check its withdrawal and queue deletion
`;

/** The gateway's default maxLeaseMs. */
const DEFAULT_MAX_LEASE_MS = 30_000;

function line(o: Outcome): string {
  const mark = o.status === 'pass' ? 'pass' : o.status === 'fail' ? 'FAIL' : 'skip';
  return `${mark}  ${o.rule}${o.detail ? `: ${o.detail}` : ''}`;
}

/**
 * `contracts-gateway conformance …`: resolves with the exit status (0 every rule passed, 1 a rule failed, 2 the bus
 * could not be reached, 64 usage).
 */
export async function runConformance(
  argv: readonly string[],
  out: (line: string) => void = (l) => console.log(l),
): Promise<number> {
  // biome-ignore lint/suspicious/noImplicitAnyLet: typed by the parseArgs call below, which TypeScript follows
  let values;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        bus: { type: 'string' },
        service: { type: 'string' },
        prefix: { type: 'string' },
        'foreign-bus': { type: 'string' },
        'service-bus': { type: 'string' },
        pid: { type: 'string' },
        'max-lease-ms': { type: 'string' },
      },
      strict: true,
    }));
  } catch (err) {
    out(`${errorMessage(err)}\n${CONFORMANCE_HELP.trimEnd()}`);
    return EXIT_USAGE;
  }
  const pid = values.pid === undefined ? undefined : Number(values.pid);
  const maxLeaseMs = Number(values['max-lease-ms'] ?? DEFAULT_MAX_LEASE_MS);
  if (!values.bus || !values.service || (pid !== undefined && !Number.isSafeInteger(pid)) || !(maxLeaseMs > 0)) {
    out(CONFORMANCE_HELP.trimEnd());
    return EXIT_USAGE;
  }
  const prefix = values.prefix ?? process.env.BUS_PREFIX ?? DEFAULT_BUS_PREFIX;
  let bus: ConformanceBus;
  try {
    bus = await ConformanceBus.open(values.bus, prefix, values.service);
  } catch (err) {
    out(`FAIL  connects to ${redactBusUrl(values.bus)}: ${errorMessage(err)}`);
    return EXIT_INPUT;
  }
  let failed = false;
  try {
    await checkService(
      bus,
      {
        bus: values.bus,
        service: values.service,
        prefix,
        foreignBus: values['foreign-bus'],
        serviceBus: values['service-bus'],
        pid,
        maxLeaseMs,
      },
      (o) => {
        failed ||= o.status === 'fail';
        out(line(o));
      },
    );
  } catch (err) {
    failed = true;
    out(`FAIL  the check stopped: ${errorMessage(err)}`);
  } finally {
    await bus.close();
  }
  return failed ? EXIT_FAILED : 0;
}
