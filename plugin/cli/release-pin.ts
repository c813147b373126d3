import { parseArgs } from 'node:util';
import { writeIfChanged } from '../config-writer/atomic-file';
import { FirstUseFileError, firstUseFile, pinsText, readPins } from '../contracts/first-use';
import { EXIT_FAILED, EXIT_INPUT, EXIT_USAGE, fail, type Command } from './command';

/**
 * `release-pin <message type…> [--data-dir DIR]`: takes first-use pins out of the gateway's data folder. A running
 * gateway reads the file again within seconds; the next service to claim the type then holds it (and is pinned).
 */
const USAGE = 'release-pin <message type>… [--data-dir <folder>]';
const SUMMARY =
  "release first-use pins, so another service may take those message types (the gateway's data folder: --data-dir, else DATA_DIR, else $EG_CONFIG_DIR/data); exit 1 when one was not pinned";
const HELP = `usage: contracts-gateway ${USAGE}
  ${SUMMARY}
  --list   print the pins (message type, service, broker user) and change nothing
`;

export const releasePin: Command = { usage: USAGE, summary: SUMMARY, help: HELP, run: runReleasePin };

async function runReleasePin(args: readonly string[]): Promise<number> {
  let parsed: ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true; strict: true }>>;
  try {
    parsed = parseArgs({ args: [...args], options: OPTIONS, allowPositionals: true, strict: true });
  } catch (err) {
    const problem = (err instanceof Error ? err.message : String(err)).split('. ')[0];
    return fail(EXIT_USAGE, `${problem}; usage: contracts-gateway ${releasePin.usage}`);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  const file = firstUseFile(values['data-dir'] ?? process.env.DATA_DIR, process.env);
  if (!file) return fail(EXIT_USAGE, 'no data folder: pass --data-dir (or set DATA_DIR or EG_CONFIG_DIR)');
  if (!values.list && positionals.length === 0)
    return fail(EXIT_USAGE, `no message type given; usage: contracts-gateway ${releasePin.usage}`);
  let pins: ReturnType<typeof readPins>;
  try {
    pins = readPins(file);
  } catch (err) {
    if (err instanceof FirstUseFileError) return fail(EXIT_INPUT, err.message);
    throw err;
  }
  if (values.list) {
    for (const [messageType, pin] of [...pins].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      process.stdout.write(`${messageType}\t${pin.service}${pin.user !== undefined ? `\t${pin.user}` : ''}\n`);
    return 0;
  }
  const missing = positionals.filter((t) => !pins.has(t));
  for (const messageType of positionals) {
    const pin = pins.get(messageType);
    if (pin === undefined) continue;
    pins.delete(messageType);
    process.stdout.write(`released ${messageType} (was pinned to ${pin.service})\n`);
  }
  if (missing.length < positionals.length) writeIfChanged(file, pinsText(pins));
  if (missing.length > 0) return fail(EXIT_FAILED, `not pinned: ${missing.join(', ')} (in ${file})`);
  return 0;
}

const OPTIONS = {
  'data-dir': { type: 'string' },
  list: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;
