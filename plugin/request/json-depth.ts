const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

export const DEFAULT_MAX_JSON_DEPTH = 64;

/**
 * True when the JSON text nests objects/arrays deeper than `max`. One pass over the UTF-8 bytes, counting brackets
 * outside strings (no byte of a multi-byte UTF-8 character is ASCII), so a deep body is refused before JSON.parse,
 * schema validation or anything else recursive sees it. Malformed text is left to the parser.
 */
export function nestedDeeperThan(utf8: Uint8Array, max: number): boolean {
  // `max + 1` levels need at least `max + 1` opening bytes.
  if (utf8.length <= max) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < utf8.length; i += 1) {
    const b = utf8[i];
    if (inString) {
      if (b === BACKSLASH) i += 1;
      else if (b === QUOTE) inString = false;
    } else if (b === QUOTE) {
      inString = true;
    } else if (b === OPEN_BRACE || b === OPEN_BRACKET) {
      if (++depth > max) return true;
    } else if (b === CLOSE_BRACE || b === CLOSE_BRACKET) {
      depth -= 1;
    }
  }
  return false;
}
