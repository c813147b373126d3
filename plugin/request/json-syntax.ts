/*
 * Whether bytes are one JSON value, as JSON.parse would take them once decoded as UTF-8, and how deep it nests:
 * one pass over the bytes that builds nothing (no string, no object), so a reply can be proven JSON and passed on
 * without being parsed (plugin/bus/envelope.ts). RFC 8259 as V8's JSON.parse reads it: whitespace is space, tab, LF
 * and CR only; strings hold no raw character below U+0020 and only the escapes \" \\ \/ \b \f \n \r \t \uXXXX (a
 * lone surrogate escape is taken); numbers are -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?; object keys are
 * strings; nothing but whitespace after the value. A byte from 0x80 up is taken inside a string and refused outside:
 * UTF-8 itself is not checked here (`isUtf8`), and a decoder that replaces bad bytes by U+FFFD never turns them into
 * a quote, a backslash or a control character, so the verdict on such bytes is JSON.parse's on their decoded text.
 */

export const JSON_OK = 0;
export const JSON_MALFORMED = 1;
/** Well-formed as far as the check got, but an object or array opened deeper than the limit. */
export const JSON_TOO_DEEP = 2;
export type JsonVerdict = typeof JSON_OK | typeof JSON_MALFORMED | typeof JSON_TOO_DEEP;

const TAB = 0x09;
const LF = 0x0a;
const CR = 0x0d;
const SPACE = 0x20;
const QUOTE = 0x22;
const PLUS = 0x2b;
const COMMA = 0x2c;
const MINUS = 0x2d;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;
const COLON = 0x3a;
const OPEN_BRACKET = 0x5b;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
/** `]` is `[` + 2 and `}` is `{` + 2. */
const CLOSE_OF = 2;

/** The byte after a backslash in a string: 1 for the one-letter escapes (`"\/bfnrt`), 2 for `u`, 0 for none. */
const ESCAPE = new Uint8Array(256);
for (const c of '"\\/bfnrt') ESCAPE[c.charCodeAt(0)] = 1;
ESCAPE[0x75 /* u */] = 2;
const HEX = new Uint8Array(256);
for (const c of '0123456789abcdefABCDEF') HEX[c.charCodeAt(0)] = 1;

/** Which container each open level is (its opening byte); grown when a caller allows more levels than it holds. */
let open = new Uint8Array(257);

function isDigit(b: number): boolean {
  return b >= ZERO && b <= NINE;
}

function skipSpace(bytes: Uint8Array, i: number, end: number): number {
  while (i < end) {
    const b = bytes[i];
    if (b !== SPACE && b !== LF && b !== CR && b !== TAB) return i;
    i += 1;
  }
  return i;
}

/** Whether the four bytes from `at` are hex digits (the XXXX of \uXXXX). */
function fourHex(bytes: Uint8Array, at: number): boolean {
  return (HEX[bytes[at]] & HEX[bytes[at + 1]] & HEX[bytes[at + 2]] & HEX[bytes[at + 3]]) === 1;
}

/** After the opening quote at i - 1: the index after the closing quote, or -1. */
function stringEnd(bytes: Uint8Array, i: number, end: number): number {
  while (i < end) {
    const b = bytes[i];
    if (b === QUOTE) return i + 1;
    if (b === BACKSLASH) {
      if (i + 1 >= end) return -1;
      const kind = ESCAPE[bytes[i + 1]];
      if (kind === 1) i += 2;
      else if (kind === 2 && i + 5 < end && fourHex(bytes, i + 2)) i += 6;
      else return -1;
    } else if (b < SPACE) {
      return -1;
    } else {
      i += 1;
    }
  }
  return -1;
}

/** From the first byte of a number (`-` or a digit): the index after it, or -1. */
function numberEnd(bytes: Uint8Array, i: number, end: number): number {
  if (bytes[i] === MINUS) i += 1;
  if (i >= end) return -1;
  // One zero, or digits not starting with one.
  if (!isDigit(bytes[i])) return -1;
  if (bytes[i] === ZERO) i += 1;
  else while (i < end && isDigit(bytes[i])) i += 1;
  if (i < end && bytes[i] === DOT) {
    const digits = i + 1;
    i = digits;
    while (i < end && isDigit(bytes[i])) i += 1;
    if (i === digits) return -1;
  }
  if (i < end && (bytes[i] | 0x20) === 0x65 /* e or E */) {
    i += 1;
    if (i < end && (bytes[i] === PLUS || bytes[i] === MINUS)) i += 1;
    const digits = i;
    while (i < end && isDigit(bytes[i])) i += 1;
    if (i === digits) return -1;
  }
  return i;
}

/** `word` (true, false, null) at i: the index after it, or -1. */
function literalEnd(bytes: Uint8Array, i: number, end: number, word: string): number {
  if (i + word.length > end) return -1;
  for (let k = 1; k < word.length; k += 1) if (bytes[i + k] !== word.charCodeAt(k)) return -1;
  return i + word.length;
}

/** At an object's key (whitespace before it allowed): the index after its colon and the whitespace after that, or -1. */
function keyEnd(bytes: Uint8Array, i: number, end: number): number {
  i = skipSpace(bytes, i, end);
  if (i >= end || bytes[i] !== QUOTE) return -1;
  const afterKey = stringEnd(bytes, i + 1, end);
  if (afterKey < 0) return -1;
  i = skipSpace(bytes, afterKey, end);
  if (i >= end || bytes[i] !== COLON) return -1;
  return i + 1;
}

/**
 * The verdict on `bytes[start, end)`: JSON_OK when it is exactly one JSON value (whitespace around it allowed)
 * nesting objects and arrays at most `maxDepth` deep, JSON_TOO_DEEP when a level beyond that opens before any
 * syntax error, JSON_MALFORMED otherwise. Iterative: a value nested millions deep costs no stack.
 */
export function checkJson(
  bytes: Uint8Array,
  start = 0,
  end = bytes.length,
  maxDepth = Number.MAX_SAFE_INTEGER,
): JsonVerdict {
  let i = start;
  let depth = 0;
  for (;;) {
    // A value starts at i, after whitespace.
    i = skipSpace(bytes, i, end);
    if (i >= end) return JSON_MALFORMED;
    const b = bytes[i];
    if (b === OPEN_BRACE || b === OPEN_BRACKET) {
      if (depth >= maxDepth) return JSON_TOO_DEEP;
      depth += 1;
      if (depth >= open.length) {
        const grown = new Uint8Array(open.length * 2);
        grown.set(open);
        open = grown;
      }
      open[depth] = b;
      i = skipSpace(bytes, i + 1, end);
      if (i < end && bytes[i] === b + CLOSE_OF) {
        depth -= 1;
        i += 1;
      } else if (b === OPEN_BRACE) {
        i = keyEnd(bytes, i, end);
        if (i < 0) return JSON_MALFORMED;
        continue;
      } else {
        continue;
      }
    } else if (b === QUOTE) {
      i = stringEnd(bytes, i + 1, end);
    } else if (b === MINUS || isDigit(b)) {
      i = numberEnd(bytes, i, end);
    } else if (b === 0x74) {
      i = literalEnd(bytes, i, end, 'true');
    } else if (b === 0x66) {
      i = literalEnd(bytes, i, end, 'false');
    } else if (b === 0x6e) {
      i = literalEnd(bytes, i, end, 'null');
    } else {
      return JSON_MALFORMED;
    }
    if (i < 0) return JSON_MALFORMED;
    // After a value: the containers it closes, then a comma before the next one, or the end.
    for (;;) {
      i = skipSpace(bytes, i, end);
      if (depth === 0) return i === end ? JSON_OK : JSON_MALFORMED;
      if (i >= end) return JSON_MALFORMED;
      const next = bytes[i];
      if (next === COMMA) {
        i += 1;
        if (open[depth] === OPEN_BRACE) {
          i = keyEnd(bytes, i, end);
          if (i < 0) return JSON_MALFORMED;
        }
        break;
      }
      if (next !== open[depth] + CLOSE_OF) return JSON_MALFORMED;
      depth -= 1;
      i += 1;
    }
  }
}
