#!/usr/bin/env node
import { runConformance } from '../conformance';

/** The subcommands of `contracts-gateway`: each takes the arguments after its name and resolves with an exit status. */
const COMMANDS: Record<string, (argv: string[]) => Promise<number>> = {
  conformance: (argv) => runConformance(argv),
};

if (require.main === module) {
  const [name, ...rest] = process.argv.slice(2);
  const command = name === undefined ? undefined : COMMANDS[name];
  if (!command) {
    console.error(`usage: contracts-gateway <${Object.keys(COMMANDS).join('|')}> …`);
    process.exitCode = 2;
  } else {
    void command(rest).then((code) => {
      process.exitCode = code;
    });
  }
}
