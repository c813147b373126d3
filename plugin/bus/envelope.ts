import { isUtf8 } from 'node:buffer';
import type { Reply } from './transport';
import { MAX_REPLY_DEPTH } from './constants';
import { checkJson, JSON_OK, JSON_TOO_DEEP } from '../request/json-syntax';

/** Whether a value has the shape of the reply envelope (docs/bus-protocol.md "Replies"). */
export function isReply(value: unknown): value is Reply {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return false;
  const r = value as { ok?: unknown; error?: unknown };
  if (r.ok === true) return true;
  if (r.ok !== false || !r.error || typeof r.error !== 'object') return false;
  return typeof (r.error as { code?: unknown }).code === 'string';
}

/** The reply that stands in for a failed handler or a malformed reply: the code only, the cause stays in the log. */
export function internalErrorReply(): Reply {
  return { ok: false, error: { code: 'INTERNAL_ERROR' } };
}

/** How the SDK's JSON.stringify writes a success reply with nothing but a result (the usual one). */
const OK_RESULT = Buffer.from('{"ok":true,"result":');
const CLOSE_BRACE = 0x7d;

/** What decodeReply answers for a reply that nests objects and arrays deeper than its limit. */
export const TOO_DEEP = Symbol('nested too deep');

/**
 * A success reply whose result is kept as the service's bytes (UTF-8 JSON, already checked) and parsed on the first
 * read of `result`, so that the gateway can pass the bytes on without parsing, serialising or encoding the result.
 * `result` is an own enumerable property as on any reply (replies compare and serialise as sent); what the class
 * adds is private. Assigning `result` drops the bytes: they are no longer the result's.
 */
class UnreadResultReply {
  readonly ok = true;
  declare result: unknown;
  #bytes: Buffer | undefined;
  #value: unknown;
  #read = false;

  constructor(bytes: Buffer) {
    this.#bytes = bytes;
    Object.defineProperty(this, 'result', UnreadResultReply.#result);
  }

  static readonly #result: PropertyDescriptor = {
    enumerable: true,
    configurable: true,
    get(this: UnreadResultReply): unknown {
      if (!this.#read) {
        this.#value = JSON.parse((this.#bytes as Buffer).toString('utf8'));
        this.#read = true;
      }
      return this.#value;
    },
    set(this: UnreadResultReply, value: unknown) {
      this.#value = value;
      this.#read = true;
      this.#bytes = undefined;
    },
  };

  static bytesOf(reply: Reply): Buffer | undefined {
    return reply instanceof UnreadResultReply ? reply.#bytes : undefined;
  }
}

/** The bytes of a decoded reply's result (UTF-8 JSON), when decodeReply kept them. */
export function resultJsonOf(reply: Reply): Buffer | undefined {
  return UnreadResultReply.bytesOf(reply);
}

/**
 * A reply's bytes as a value: undefined when they are not JSON, TOO_DEEP when they nest objects and arrays deeper
 * than `maxDepth` (the envelope counts). Either way nothing was parsed: the bytes are first checked with a scan that
 * builds nothing (request/json-syntax.ts).
 *
 * The usual success reply, `{"ok":true,"result":…}` in valid UTF-8, is not parsed at all: its result's bytes are
 * kept (resultJsonOf) and parsed only when something reads `result` (the output check's sample, writeOnly removal,
 * strictOutput), so the gateway can pass them on as they came. Any other shape, text after the result, or bytes that
 * are not UTF-8 (the text then has U+FFFD in their place, which is what the caller gets), is parsed whole.
 */
export function decodeReply(bytes: Buffer, maxDepth: number = MAX_REPLY_DEPTH): unknown {
  const last = bytes.length - 1;
  if (
    last > OK_RESULT.length &&
    OK_RESULT.compare(bytes, 0, OK_RESULT.length) === 0 &&
    bytes[last] === CLOSE_BRACE &&
    isUtf8(bytes)
  ) {
    // The envelope is one level.
    const verdict = checkJson(bytes, OK_RESULT.length, last, maxDepth - 1);
    if (verdict === JSON_OK) return new UnreadResultReply(bytes.subarray(OK_RESULT.length, last));
    if (verdict === JSON_TOO_DEEP) return TOO_DEEP;
    // e.g. `,"status":201` after the result: the whole envelope below
  }
  const verdict = checkJson(bytes, 0, bytes.length, maxDepth);
  if (verdict === JSON_TOO_DEEP) return TOO_DEEP;
  if (verdict !== JSON_OK) return undefined;
  try {
    return JSON.parse(bytes.toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}
