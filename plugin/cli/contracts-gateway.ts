#!/usr/bin/env node
/**
 * `contracts-gateway <command> …`: the gateway's tools for service pipelines. The commands are in one table
 * (./commands.ts); each returns its exit code: 0 fine, 1 the check failed, 2 an input could not be read, 64 usage.
 */
import { COMMANDS, usage } from './commands';
import { EXIT_INPUT, EXIT_USAGE, asksForHelp, fail } from './command';

async function main(argv: readonly string[]): Promise<number> {
  const [name, ...args] = argv;
  if (name === '--help' || name === '-h') {
    process.stdout.write(usage());
    return 0;
  }
  const command = name === undefined ? undefined : COMMANDS[name];
  if (!command) {
    process.stderr.write(usage());
    return fail(EXIT_USAGE, name === undefined ? 'no command given' : `unknown command ${JSON.stringify(name)}`);
  }
  if (asksForHelp(args)) {
    process.stdout.write(command.help ?? `usage: contracts-gateway ${command.usage}\n  ${command.summary}\n`);
    return 0;
  }
  return command.run(args);
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.exitCode = fail(EXIT_INPUT, err instanceof Error ? err.message : String(err));
  },
);
