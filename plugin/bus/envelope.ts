import { isUtf8 } from 'node:buffer';
import type { Reply } from './transport';

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
const OK_RESULT = '{"ok":true,"result":';

/** The result's JSON bytes as the service sent them, beside the decoded reply (not on it: replies compare as sent). */
const resultTexts = new WeakMap<object, Buffer>();

/** The bytes of a decoded reply's result (UTF-8 JSON), when decodeReply kept them. */
export function resultJsonOf(reply: Reply): Buffer | undefined {
  return resultTexts.get(reply);
}

/**
 * A reply's bytes as a value (undefined: not JSON). The usual success reply is taken apart as text: its result is
 * parsed alone (parsing is what tells JSON from anything else) and its bytes kept (resultJsonOf), so the gateway can
 * pass them on without serialising and encoding it again. Any other shape, text after the result, or bytes that are
 * not UTF-8 (the text then has U+FFFD in their place, which is what the caller gets), is parsed whole.
 */
export function decodeReply(bytes: Buffer): unknown {
  const text = bytes.toString('utf8');
  if (text.startsWith(OK_RESULT) && text.charCodeAt(text.length - 1) === 0x7d /* } */ && isUtf8(bytes)) {
    try {
      const reply = { ok: true, result: JSON.parse(text.slice(OK_RESULT.length, -1)) as unknown };
      // The prefix and the closing brace are ASCII: one byte per character.
      resultTexts.set(reply, bytes.subarray(OK_RESULT.length, bytes.length - 1));
      return reply;
    } catch {
      // e.g. `,"status":201` after the result: the whole envelope below
    }
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
