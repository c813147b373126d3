import { readFileSync } from 'node:fs';
import { parse, YAMLParseError } from 'yaml';
import { isRecord } from '../is-record';

/*
 * The services file: the one list of who may be on the bus and what each service owns. The definitions tool
 * (`contracts-broker-definitions --services FILE`) writes the broker users and permissions from it, and the gateway
 * (`busServicesFile`) takes its announcement users and ownership pins from the same file, so the two never drift.
 *
 *   services:
 *     users-service:
 *       messageTypes: [CreateUserCommand, 'User*']   # exact names, or a prefix ending in *
 *       pathPrefixes: [/api/users]                   # optional
 *       httpPaths: true                              # optional: may declare http.paths (default false)
 *     auth-service:
 *       user: svc-auth                               # optional: its broker user (default: the service name)
 *       messageTypes: [AuthenticateCommand]
 *       public: true                                 # optional: may declare public contracts (default false)
 *       httpPaths: true
 */

interface ServiceEntry {
  /** Its broker user (RabbitMQ's validated user_id of its announcements). */
  user: string;
  /** Message types only it may announce: exact names, or a prefix ending in `*`. */
  messageTypes: string[];
  /** Path prefixes under which only it may have routes. */
  pathPrefixes: string[];
  /** May declare `public: true` contracts. */
  public: boolean;
  /** May declare `http.paths`. */
  httpPaths: boolean;
}

/** service name → its entry, in the file's order. */
export type ServicesList = Readonly<Record<string, ServiceEntry>>;

// As the broker definitions require (routing keys, queue names, user names) and the registry's message types.
const NAME = /^[A-Za-z0-9_.-]{1,200}$/;
const MESSAGE_TYPE_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}\*?$|^\*$/;
const ENTRY_KEYS = ['user', 'messageTypes', 'pathPrefixes', 'public', 'httpPaths'] as const;
const MAX_FILE_BYTES = 1024 * 1024;

/** What is wrong with a services file; the message names the place, never the file's contents beyond a key. */
class ServicesFileError extends Error {
  constructor(file: string, problem: string) {
    super(`${file}: ${problem}`);
    this.name = 'ServicesFileError';
  }
}

function stringList(value: unknown, where: string, valid: (s: string) => boolean, what: string): string[] {
  if (!Array.isArray(value)) throw new Error(`${where} must be a list`);
  value.forEach((item, i) => {
    if (typeof item !== 'string' || !valid(item)) throw new Error(`${where}[${i}] is not ${what}`);
  });
  return [...new Set(value as string[])];
}

/** Checks a parsed services file; throws an Error naming the first problem. */
function checkServicesList(doc: unknown): ServicesList {
  if (!isRecord(doc)) throw new Error('must be a mapping with a services key');
  for (const key of Object.keys(doc))
    if (key !== 'services') throw new Error(`has an unknown key ${JSON.stringify(key)} (known: services)`);
  const services = doc.services;
  if (!isRecord(services) || Object.keys(services).length === 0)
    throw new Error('services must map at least one service name to its entry');
  const out: Record<string, ServiceEntry> = {};
  const userOf = new Map<string, string>();
  for (const [service, raw] of Object.entries(services)) {
    const at = `services.${service}`;
    if (!NAME.test(service))
      throw new Error(`service name ${JSON.stringify(service)} is not usable (letters, digits, _ . - only)`);
    if (!isRecord(raw)) throw new Error(`${at} must be a mapping`);
    for (const key of Object.keys(raw)) {
      if (!(ENTRY_KEYS as readonly string[]).includes(key))
        throw new Error(`${at} has an unknown key ${JSON.stringify(key)} (known: ${ENTRY_KEYS.join(', ')})`);
    }
    const user = raw.user ?? service;
    if (typeof user !== 'string' || !NAME.test(user))
      throw new Error(`${at}.user is not a usable broker user name (letters, digits, _ . - only)`);
    const shared = userOf.get(user);
    if (shared !== undefined)
      throw new Error(`${at}.user is also the broker user of ${shared}: every service needs one of its own`);
    userOf.set(user, service);
    if (raw.messageTypes === undefined)
      throw new Error(`${at}.messageTypes is missing: list the message types it owns`);
    const messageTypes = stringList(
      raw.messageTypes,
      `${at}.messageTypes`,
      (s) => MESSAGE_TYPE_PATTERN.test(s),
      'a message type or a prefix ending in *',
    );
    if (messageTypes.length === 0) throw new Error(`${at}.messageTypes is empty: list the message types it owns`);
    const pathPrefixes =
      raw.pathPrefixes === undefined
        ? []
        : stringList(
            raw.pathPrefixes,
            `${at}.pathPrefixes`,
            (s) => /^\/[^\s]*$/.test(s) && s.length <= 500,
            'a path starting with /',
          );
    for (const flag of ['public', 'httpPaths'] as const) {
      if (raw[flag] !== undefined && typeof raw[flag] !== 'boolean')
        throw new Error(`${at}.${flag} must be true or false`);
    }
    out[service] = { user, messageTypes, pathPrefixes, public: raw.public === true, httpPaths: raw.httpPaths === true };
  }
  return out;
}

/**
 * Reads and checks a services file (YAML, or JSON). Throws ServicesFileError naming the file and the problem: a
 * missing or unreadable file, a syntax error (line and column only: the parser's excerpt would echo the file), an
 * unknown key, a malformed entry.
 */
export function readServicesFile(file: string): ServicesList {
  let text: string;
  try {
    const buffer = readFileSync(file);
    if (buffer.length > MAX_FILE_BYTES) throw new ServicesFileError(file, `is larger than ${MAX_FILE_BYTES} bytes`);
    text = buffer.toString('utf8');
  } catch (err) {
    if (err instanceof ServicesFileError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    throw new ServicesFileError(
      file,
      code === 'ENOENT'
        ? 'does not exist'
        : code === 'EACCES'
          ? 'is not readable (permission denied)'
          : code === 'EISDIR'
            ? 'is a directory'
            : `cannot be read (${code ?? 'error'})`,
    );
  }
  let doc: unknown;
  try {
    doc = parse(text, { uniqueKeys: true, maxAliasCount: 0 });
  } catch (err) {
    const pos = err instanceof YAMLParseError ? err.linePos?.[0] : undefined;
    throw new ServicesFileError(file, `is not valid YAML${pos ? ` (line ${pos.line}, column ${pos.col})` : ''}`);
  }
  try {
    return checkServicesList(doc);
  } catch (err) {
    throw new ServicesFileError(file, (err as Error).message);
  }
}
