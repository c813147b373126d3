import { dirname, join } from 'node:path';
import { decodeFieldTable, MAX_TABLE_DEPTH } from './field-table';

/*
 * amqplib decodes every field table (a message's headers among them) before any of our code sees the message, with
 * no bound on nesting or size (field-table.ts says what that cost). This module, imported before amqplib is loaded,
 * replaces the codec's decodeFields (amqplib's defs.js takes it once, when it loads) with field-table.ts's bounded
 * decoder: a table over its bounds, or malformed (amqplib's own decoder threw there, which closed the connection),
 * becomes INVALID_HEADERS, an empty table that the consumers recognise and drop. A self-check at load tells whether
 * the replacement took (headerGuardInstalled).
 */

/**
 * Nesting our own headers never come near (they are flat); deeper tables are refused.
 * @public test/bus/header-guard.test.ts reads it in a process of its own
 */
export const MAX_HEADER_DEPTH = MAX_TABLE_DEPTH;

const INVALID = Symbol('invalid field table');
/**
 * What a field table that was too deep, too large or undecodable decodes to: no headers at all.
 * @public test/bus/header-guard.test.ts reads it in a process of its own
 */
export const INVALID_HEADERS: Readonly<Record<string, never>> = Object.freeze({ [INVALID]: true }) as Record<
  string,
  never
>;

/** Whether a message's headers were refused by the guard (the message is then dropped unread). */
export function hasInvalidHeaders(msg: { properties: { headers?: unknown } }): boolean {
  return msg.properties.headers === INVALID_HEADERS;
}

type DecodeFields = (slice: Buffer) => Record<string, unknown>;
interface Codec {
  decodeFields: DecodeFields & { guarded?: true };
}

const guarded: DecodeFields & { guarded: true } = Object.assign(
  (slice: Buffer): Record<string, unknown> => {
    try {
      return decodeFieldTable(slice);
    } catch {
      return INVALID_HEADERS;
    }
  },
  { guarded: true as const },
);

/**
 * A BasicProperties frame payload whose headers nest `depth` tables (each under the key "a").
 * @public test/bus/header-guard.test.ts calls it in a process of its own
 */
export function nestedHeadersPayload(depth: number): Buffer {
  let table = Buffer.alloc(0);
  for (let i = 0; i < depth; i++) {
    const outer = Buffer.alloc(7 + table.length);
    outer.writeUInt8(1, 0);
    outer.write('a', 1);
    outer.write('F', 2);
    outer.writeUInt32BE(table.length, 3);
    table.copy(outer, 7);
    table = outer;
  }
  const payload = Buffer.alloc(6 + table.length);
  payload.writeUInt16BE(0x2000, 0); // property flags: headers only
  payload.writeUInt32BE(table.length, 2);
  table.copy(payload, 6);
  return payload;
}

/** The amqplib file `name` (lib/…), past its package exports, which list only the public API. */
function amqplibFile(name: string): string {
  return join(dirname(require.resolve('amqplib')), 'lib', name);
}

function install(): boolean {
  try {
    const codec = require(amqplibFile('codec.js')) as Codec;
    if (!codec.decodeFields.guarded) codec.decodeFields = guarded;
    // The check: what amqplib's own property decoder makes of a table one level too deep.
    const defs = require(amqplibFile('defs.js')) as { decode(id: number, buf: Buffer): { headers?: unknown } };
    const BASIC_PROPERTIES = 60;
    return defs.decode(BASIC_PROPERTIES, nestedHeadersPayload(MAX_HEADER_DEPTH + 1)).headers === INVALID_HEADERS;
  } catch {
    return false;
  }
}

/**
 * Whether amqplib decodes header tables through the guard. False when amqplib was loaded before this module (or its
 * layout changed): the transport then logs a warning at start, and deeply nested headers can close its connection.
 */
export const headerGuardInstalled: boolean = install();
