/*
 * A decoder of AMQP 0-9-1 field tables (message headers, method arguments) that gives the same values as amqplib's
 * own (lib/codec.js decodeFields, 2.3.1) within two bounds, and throws FieldTableRefused beyond them:
 * - MAX_TABLE_DEPTH levels of nested tables and arrays: amqplib's recursion had no bound, and a table nested
 *   ~9,000 deep (RabbitMQ passes it on) overflowed the stack in the frame parser, taking the connection down;
 * - MAX_TABLE_ENTRIES values in all: a 108 KB table of 12,000 short keys took amqplib 3–16 ms to decode, so a
 *   stream of them would have kept a consumer's process busy at a few messages per second.
 * A key `__proto__` becomes an own property rather than the object's prototype.
 */

/** Nesting our own headers never come near (they are flat). */
export const MAX_TABLE_DEPTH = 16;
/** Values in one table, nested ones included: ours carry fewer than ten; RabbitMQ's own tables a few dozen. */
const MAX_TABLE_ENTRIES = 128;

class FieldTableRefused extends Error {}

const TOO_DEEP = new FieldTableRefused(`field table nested deeper than ${MAX_TABLE_DEPTH}`);
const TOO_MANY = new FieldTableRefused(`field table with more than ${MAX_TABLE_ENTRIES} values`);

/** Decodes the field table in `slice` (without its length prefix); throws on malformed input, as amqplib does. */
export function decodeFieldTable(slice: Buffer): Record<string, unknown> {
  const count = { values: 0 };
  return decodeTable(slice, count, 0);
}

function decodeTable(slice: Buffer, count: { values: number }, depth: number): Record<string, unknown> {
  if (depth > MAX_TABLE_DEPTH) throw TOO_DEEP;
  const fields: Record<string, unknown> = {};
  let offset = 0;
  let val: unknown;

  const value = (): void => {
    if (++count.values > MAX_TABLE_ENTRIES) throw TOO_MANY;
    const tag = String.fromCharCode(slice[offset]);
    offset++;
    let len: number;
    switch (tag) {
      case 'b':
        val = slice.readInt8(offset);
        offset++;
        break;
      case 'B':
        val = slice.readUInt8(offset);
        offset++;
        break;
      case 'S':
        len = slice.readUInt32BE(offset);
        offset += 4;
        val = slice.toString('utf8', offset, offset + len);
        offset += len;
        break;
      case 'I':
        val = slice.readInt32BE(offset);
        offset += 4;
        break;
      case 'i':
        val = slice.readUInt32BE(offset);
        offset += 4;
        break;
      case 'D': {
        const places = slice[offset];
        offset++;
        const digits = slice.readUInt32BE(offset);
        offset += 4;
        val = { '!': 'decimal', value: { places, digits } };
        break;
      }
      case 'T':
        val = { '!': 'timestamp', value: Number(slice.readBigUInt64BE(offset)) };
        offset += 8;
        break;
      case 'F':
        len = slice.readUInt32BE(offset);
        offset += 4;
        val = decodeTable(slice.subarray(offset, offset + len), count, depth + 1);
        offset += len;
        break;
      case 'A': {
        len = slice.readUInt32BE(offset);
        offset += 4;
        if (depth + 1 > MAX_TABLE_DEPTH) throw TOO_DEEP;
        const until = offset + len;
        const items: unknown[] = [];
        // Arrays nest through value() itself: track their depth by the tables they hold (below) and this level.
        depth += 1;
        while (offset < until) {
          value();
          items.push(val);
        }
        depth -= 1;
        val = items;
        break;
      }
      case 'd':
        val = slice.readDoubleBE(offset);
        offset += 8;
        break;
      case 'f':
        val = slice.readFloatBE(offset);
        offset += 4;
        break;
      case 'l':
        val = Number(slice.readBigInt64BE(offset));
        offset += 8;
        break;
      case 's':
        val = slice.readInt16BE(offset);
        offset += 2;
        break;
      case 'u':
        val = slice.readUInt16BE(offset);
        offset += 2;
        break;
      case 't':
        val = slice[offset] !== 0;
        offset++;
        break;
      case 'V':
        val = null;
        break;
      case 'x':
        len = slice.readUInt32BE(offset);
        offset += 4;
        val = slice.subarray(offset, offset + len);
        offset += len;
        break;
      default:
        throw new TypeError(`Unexpected type tag "${tag}"`);
    }
  };

  while (offset < slice.length) {
    const len = slice.readUInt8(offset);
    offset++;
    const key = slice.toString('utf8', offset, offset + len);
    offset += len;
    value();
    if (key === '__proto__')
      Object.defineProperty(fields, key, { value: val, enumerable: true, writable: true, configurable: true });
    else fields[key] = val;
  }
  return fields;
}
