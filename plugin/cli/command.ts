/** The check ran and found what it refuses (a breaking change). */
export const EXIT_FAILED = 1;
/** An input could not be read: a file, a gateway's answer. */
export const EXIT_INPUT = 2;
/** The command line itself is wrong (sysexits' EX_USAGE). */
export const EXIT_USAGE = 64;

/** Prints one line on stderr, prefixed like the gateway's other tools, and returns the exit code. */
export function fail(code: number, message: string): number {
  process.stderr.write(`contracts-gateway: ${message.replace(/\s*\n\s*/g, ' ')}\n`);
  return code;
}

/** A reason an input cannot be used: reported as one line with EXIT_INPUT. */
export class InputError extends Error {}

/** One subcommand of `contracts-gateway`: what `--help` says, and what runs it (resolves to the exit code). */
export interface Command {
  usage: string;
  summary: string;
  /** The whole text of `contracts-gateway <command> --help`, when it says more than the usage and the summary. */
  help?: string;
  run(args: readonly string[]): Promise<number>;
}

/** Whether a command line asks for the usage (`--help` or `-h`): every command prints it on stdout and exits 0. */
export function asksForHelp(args: readonly string[]): boolean {
  return args.includes('--help') || args.includes('-h');
}
