import { dirname, join } from 'node:path';

/*
 * amqplib decodes every field table (a message's headers among them) with a recursive decoder, before any of our
 * code sees the message: a header table nested some thousands deep, which RabbitMQ passes on, overflows the stack in
 * the frame parser and the connection goes down with it. This module, imported before amqplib is loaded, wraps the
 * codec's decodeFields (amqplib's defs.js takes it once, when it loads): a table that cannot be decoded (the
 * overflow is caught) or that nests more than MAX_HEADER_DEPTH deep becomes INVALID_HEADERS, an empty table that
 * the consumers recognise and drop. A self-check at load tells whether the wrap took (see headerGuardInstalled).
 */

/** Nesting our own headers never come near (they are flat); deeper tables are refused. */
export const MAX_HEADER_DEPTH = 16;

const INVALID = Symbol('invalid field table');
/** What a field table that was too deep or undecodable decodes to: no headers at all. */
export const INVALID_HEADERS: Readonly<Record<string, never>> = Object.freeze({ [INVALID]: true }) as Record<string, never>;

/** Whether a message's headers were refused by the guard (the message is then dropped unread). */
export function hasInvalidHeaders(msg: { properties: { headers?: unknown } }): boolean {
  return msg.properties.headers === INVALID_HEADERS;
}

type DecodeFields = (slice: Buffer) => Record<string, unknown>;
interface Codec {
  decodeFields: DecodeFields & { guarded?: true };
}

/** Whether `value` nests objects or arrays more than `max` levels below itself (walked without recursion). */
function deeperThan(value: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop() as [unknown, number];
    if (v === null || typeof v !== 'object' || Buffer.isBuffer(v)) continue;
    if (depth > max) return true;
    for (const child of Object.values(v)) stack.push([child, depth + 1]);
  }
  return false;
}

function guard(original: DecodeFields): DecodeFields & { guarded: true } {
  const decodeFields = (slice: Buffer): Record<string, unknown> => {
    let fields: Record<string, unknown>;
    try {
      fields = original(slice);
    } catch {
      return INVALID_HEADERS; // a RangeError (stack overflow, short buffer) or an unknown type tag
    }
    // Flat tables (ours: strings only) are the rule; only a table holding a table or array is walked.
    for (const key in fields) {
      const v = fields[key];
      if (v !== null && typeof v === 'object' && !Buffer.isBuffer(v)) return deeperThan(fields, MAX_HEADER_DEPTH) ? INVALID_HEADERS : fields;
    }
    return fields;
  };
  return Object.assign(decodeFields, { guarded: true as const });
}

/** A BasicProperties frame payload whose headers nest `depth` tables (each under the key "a"). */
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
    if (!codec.decodeFields.guarded) codec.decodeFields = guard(codec.decodeFields);
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
