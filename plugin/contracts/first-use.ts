import { mkdirSync, readFileSync, statSync, unwatchFile, watchFile } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { writeIfChanged } from '../config-writer/atomic-file';
import { isRecord } from '../is-record';
import { inert } from '../log-once';
import type { Logger } from '../logger';

/*
 * Trust on first use, without a services file: the first service to hold a message type keeps it, through its own
 * restarts and the gateway's, so a newcomer cannot take it while the owner is away. The pins live in one JSON file
 * in the gateway's data folder, written atomically; `contracts-gateway release-pin` takes one out again.
 *
 *   {"version":1,"pins":{"AuthenticateCommand":{"service":"auth-service","user":"svc-auth"}}}
 */

/** The file's name in the data folder. */
export const FIRST_USE_FILE = 'first-use-pins.json';
/** Pins kept at most: a flood of new message types must not grow the file and the map without bound. */
export const MAX_FIRST_USE_PINS = 10_000;
/** How often the gateway looks whether the file was changed by someone else (the release command). */
const WATCH_INTERVAL_MS = 2000;

/** Who holds a message type: its service, and its broker user when broker users are required. */
export interface FirstUsePin {
  service: string;
  user?: string;
}

export type PinTable = Map<string, FirstUsePin>;

/**
 * The pins file in a data folder: the one given, else `$EG_CONFIG_DIR/data` (where `npm start` keeps its data);
 * undefined without either.
 */
export function firstUseFile(dataDir: string | undefined, env: NodeJS.ProcessEnv): string | undefined {
  const dir = dataDir ? resolve(dataDir) : env.EG_CONFIG_DIR ? join(resolve(env.EG_CONFIG_DIR), 'data') : undefined;
  return dir === undefined ? undefined : join(dir, FIRST_USE_FILE);
}

/** What is wrong with the file; names the file and the place, never its contents. */
export class FirstUseFileError extends Error {}

/** The pins of a file's text; throws FirstUseFileError naming the problem. */
function parsePins(file: string, text: string): PinTable {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new FirstUseFileError(`${file}: not JSON`);
  }
  if (!isRecord(parsed) || parsed.version !== 1 || !isRecord(parsed.pins))
    throw new FirstUseFileError(`${file}: not a first-use pins file (version 1, pins)`);
  const pins: PinTable = new Map();
  for (const [messageType, pin] of Object.entries(parsed.pins)) {
    if (!isRecord(pin) || typeof pin.service !== 'string' || (pin.user !== undefined && typeof pin.user !== 'string'))
      throw new FirstUseFileError(`${file}: the pin of ${inert(messageType, 200)} is not {service, user?}`);
    pins.set(messageType, pin.user === undefined ? { service: pin.service } : { service: pin.service, user: pin.user });
  }
  return pins;
}

/** The file's text for these pins, sorted by message type so that a diff shows only what changed. */
export function pinsText(pins: PinTable): string {
  const sorted = [...pins].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `${JSON.stringify({ version: 1, pins: Object.fromEntries(sorted) }, null, 2)}\n`;
}

/** The pins of a file, empty when it does not exist yet; throws FirstUseFileError when it cannot be used. */
export function readPins(file: string): PinTable {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException)?.code === 'ENOENT') return new Map();
    throw new FirstUseFileError(`${file}: cannot be read (${(error as NodeJS.ErrnoException)?.code ?? 'error'})`);
  }
  return parsePins(file, text);
}

/**
 * The gateway's table of first-use pins. Without a file (no data folder) the pins last as long as the process.
 * The registry asks `holder()` for each claim and calls `hold()` for each message type it serves.
 */
export class FirstUsePins {
  private pins: PinTable;
  private full = false;
  private lastText: string | undefined;

  constructor(
    private readonly file: string | undefined,
    private readonly log?: Pick<Logger, 'warn'>,
  ) {
    this.pins = file === undefined ? new Map() : readPins(file);
    if (file !== undefined) {
      this.lastText = pinsText(this.pins);
      watchFile(file, { interval: WATCH_INTERVAL_MS, persistent: false }, () => this.reload());
    }
  }

  /** Who holds a message type by first use, if anyone. */
  holder(messageType: string): FirstUsePin | undefined {
    return this.pins.get(messageType);
  }

  /** Pins the message types not pinned yet to the service serving them; writes the file once when any is new. */
  hold(served: ReadonlyArray<{ messageType: string; service: string; user?: string | undefined }>): void {
    let added = false;
    for (const { messageType, service, user } of served) {
      if (this.pins.has(messageType)) continue;
      if (this.pins.size >= MAX_FIRST_USE_PINS) {
        if (!this.full)
          this.log?.warn(
            `first-use pins: ${MAX_FIRST_USE_PINS} message types are pinned; new ones are first-come until pins are released (contracts-gateway release-pin)`,
          );
        this.full = true;
        break;
      }
      this.pins.set(messageType, user === undefined ? { service } : { service, user });
      added = true;
    }
    if (added) this.save();
  }

  /** The pins, sorted by message type (for the discovery answer and tests). */
  list(): Array<{ messageType: string } & FirstUsePin> {
    return [...this.pins]
      .map(([messageType, pin]) => ({ messageType, ...pin }))
      .sort((a, b) => (a.messageType < b.messageType ? -1 : a.messageType > b.messageType ? 1 : 0));
  }

  close(): void {
    if (this.file !== undefined) unwatchFile(this.file);
  }

  private save(): void {
    if (this.file === undefined) return;
    const text = pinsText(this.pins);
    try {
      // The data folder may not exist yet (no reference services, which create it on `npm start`).
      mkdirSync(dirname(this.file), { recursive: true, mode: 0o700 });
      writeIfChanged(this.file, text);
      this.lastText = text;
    } catch (error) {
      // Kept in memory meanwhile; the next new pin tries again.
      this.log?.warn(
        `first-use pins: could not write ${this.file} (${(error as NodeJS.ErrnoException)?.code ?? 'error'})`,
      );
    }
  }

  /** Takes the file's pins when someone else changed it (a released pin); a broken file is logged and ignored. */
  private reload(): void {
    if (this.file === undefined) return;
    try {
      if (!statSync(this.file, { throwIfNoEntry: false })) return;
      const text = readFileSync(this.file, 'utf8');
      if (text === this.lastText) return;
      this.pins = parsePins(this.file, text);
      this.lastText = text;
      this.full = this.pins.size >= MAX_FIRST_USE_PINS;
      this.onReload?.();
    } catch (error) {
      this.log?.warn(`first-use pins: kept the pins held before; ${error instanceof Error ? error.message : 'error'}`);
    }
  }

  /** Called after the pins were read again from the file (the registry re-decides ownership). */
  onReload?: () => void;
}
