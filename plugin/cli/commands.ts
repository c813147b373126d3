import { checkCompat } from './check-compat';
import type { Command } from './command';
import { CONFORMANCE_HELP, CONFORMANCE_USAGE, runConformance } from '../conformance';
import { releasePin } from './release-pin';

/** Every subcommand, in one place: a new one is a line here and a module of its own. */
export const COMMANDS: Readonly<Record<string, Command>> = {
  'check-compat': checkCompat,
  conformance: {
    usage: CONFORMANCE_USAGE,
    summary:
      'check a running service over the bus against docs/bus-protocol.md, one line per rule; exit 1 on a failure',
    help: CONFORMANCE_HELP,
    run: (args) => runConformance(args),
  },
  'release-pin': releasePin,
};

export function usage(): string {
  const lines = Object.values(COMMANDS).map((c) => `  contracts-gateway ${c.usage}\n      ${c.summary}\n`);
  return `usage:\n${lines.join('')}`;
}
