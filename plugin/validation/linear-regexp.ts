import { RE2JS } from 're2js';
import type { RegExpEngine, RegExpLike } from 'ajv/dist/types';

/*
 * Every `pattern` and `patternProperties` key of a contract runs on RE2 (re2js): time linear in the input, where
 * V8's backtracking engine took 53 s on `^(a+)+$` against 29 characters. RE2 has no lookaround and no
 * backreferences; a contract that uses them is refused when it is announced (schema-cost.ts). ECMAScript's `\uXXXX`
 * and `\s` are translated, since RE2 spells the one `\x{XXXX}` and means fewer characters by the other.
 */

/** ECMAScript's \s: what it matches beyond RE2's [\t\n\f\r ]. */
const JS_SPACE =
  '\\t\\n\\x{0B}\\f\\r \\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}';

/** An ECMAScript (u-mode) pattern in RE2's syntax, for the escapes the two spell differently. */
export function toRe2Syntax(pattern: string): string {
  let out = '';
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c !== '\\') {
      if (c === '[' && !inClass) inClass = true;
      else if (c === ']' && inClass) inClass = false;
      out += c;
      continue;
    }
    const next = pattern[i + 1] ?? '';
    const hex4 = /^[0-9A-Fa-f]{4}$/.test(pattern.slice(i + 2, i + 6)) ? pattern.slice(i + 2, i + 6) : undefined;
    const braced = /^\{([0-9A-Fa-f]{1,6})\}/.exec(pattern.slice(i + 2));
    if (next === 'u' && hex4 !== undefined) {
      out += `\\x{${hex4}}`;
      i += 5;
    } else if (next === 'u' && braced) {
      out += `\\x{${braced[1]}}`;
      i += 1 + braced[0].length;
    } else if (next === 's') {
      out += inClass ? JS_SPACE : `[${JS_SPACE}]`;
      i += 1;
    } else if (next === 'S' && !inClass) {
      out += `[^${JS_SPACE}]`;
      i += 1;
    } else {
      out += c + next;
      i += 1;
    }
  }
  return out;
}

/** A pattern compiled for RE2, with the size of its program (what one step of matching may cost). */
export interface LinearPattern extends RegExpLike {
  programSize: number;
  /** `/pattern/`: ajv keys its compiled patterns by it. */
  toString(): string;
}

/** A pattern compiled for RE2, or an Error saying why it cannot run there. */
function compileLinear(pattern: string): LinearPattern | Error {
  try {
    const re = RE2JS.compile(toRe2Syntax(pattern));
    return { test: (s: string) => re.test(s), toString: () => `/${pattern}/`, programSize: re.programSize() };
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    return new Error(
      `pattern ${JSON.stringify(pattern.slice(0, 80))} cannot run on the linear-time engine (${why.slice(0, 120)})`,
    );
  }
}

/** Compiled patterns (for ajv, the announcement check and write-only.ts), cleared when full: patterns come with contracts. */
const compiled = new Map<string, LinearPattern | Error>();
const MAX_COMPILED = 1000;

/** compileLinear, compiled once per pattern. */
export function cachedLinear(pattern: string): LinearPattern | Error {
  let re = compiled.get(pattern);
  if (re === undefined) {
    if (compiled.size >= MAX_COMPILED) compiled.clear();
    compiled.set(pattern, (re = compileLinear(pattern)));
  }
  return re;
}

/** ajv's `code.regExp`: every pattern of a compiled schema through RE2. */
export const linearRegExp: RegExpEngine = Object.assign(
  (pattern: string): RegExpLike => {
    // Compiled once for the announcement's check (schema-cost.ts) and again here: the cache serves the second.
    const re = cachedLinear(pattern);
    if (re instanceof Error) throw re;
    return re;
  },
  { code: 'linearRegExp' },
);
