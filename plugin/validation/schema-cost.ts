import { cachedLinear } from './linear-regexp';

/*
 * What a schema would make every request cost, checked once when its contract is announced, so that a contract
 * that could tie up the gateway is refused with the reason rather than served: a `pattern` (or `patternProperties`
 * key) that the linear-time engine cannot run or whose program is large (RE2's time is linear in the input but
 * grows with the program: `^(?:(?:a{1,10}){1,10}){1,10}$`, 2,003 instructions, took 250 ms on 1,000 characters),
 * and a `uniqueItems` that ajv checks pair by pair (items that are not of scalar types) on arrays of unbounded
 * length.
 */

/** The longest array whose items ajv may compare pair by pair (uniqueItems without scalar item types). */
export const MAX_UNIQUE_ITEMS = 500;

/** RE2 instructions one pattern may compile to, and all the patterns of one schema together. */
export const MAX_PATTERN_PROGRAM = 500;
export const MAX_SCHEMA_PROGRAM = 4000;
/**
 * Characters of one pattern, and patterns in one announcement: compiling them is this check's own cost (about
 * 10 µs for a short pattern; a 256 KB announcement holds some 8,000, which took 75 ms to check).
 */
export const MAX_PATTERN_LENGTH = 1000;
export const MAX_PATTERNS_PER_ANNOUNCEMENT = 256;

/**
 * Every key of an object is tested against every `patternProperties` pattern (about 1 µs each on RE2): 64 patterns
 * took 2.5 s on a 1 MB body of 100,000 keys. Up to FREE_KEY_PATTERNS need no bound; more need `maxProperties` with
 * keys × patterns at most MAX_KEY_PATTERN_TESTS.
 */
export const FREE_KEY_PATTERNS = 2;
export const MAX_KEY_PATTERN_TESTS = 20_000;

/** The patterns counted so far in one announcement (its schemas share one). */
export interface PatternTally {
  patterns: number;
}

/** Keywords whose values are data, not schemas: a `pattern` member in them is an example, not a pattern. */
const DATA_KEYWORDS = new Set(['enum', 'const', 'default', 'examples', 'example']);
const SCALAR_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'null']);

function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** ajv compares items by hashing (linear) only when `items` declares scalar types and nothing else. */
function scalarItems(items: unknown): boolean {
  if (!isRecord(items)) return false;
  const types = Array.isArray(items.type) ? items.type : [items.type];
  return types.length > 0 && types.every((t) => typeof t === 'string' && SCALAR_TYPES.has(t));
}

/** Why `pattern` cannot be used, or undefined; adds its program to `total`. */
function patternProblem(pattern: string, total: { size: number }, tally: PatternTally): string | undefined {
  if (++tally.patterns > MAX_PATTERNS_PER_ANNOUNCEMENT) return `has more than ${MAX_PATTERNS_PER_ANNOUNCEMENT} patterns in one announcement`;
  if (pattern.length > MAX_PATTERN_LENGTH) return `has a pattern of ${pattern.length} characters, over ${MAX_PATTERN_LENGTH}`;
  const re = cachedLinear(pattern);
  if (re instanceof Error) return re.message;
  if (re.programSize > MAX_PATTERN_PROGRAM) return `pattern ${JSON.stringify(pattern.slice(0, 80))} compiles to ${re.programSize} instructions, over ${MAX_PATTERN_PROGRAM}`;
  total.size += re.programSize;
  if (total.size > MAX_SCHEMA_PROGRAM) return `patterns compile to more than ${MAX_SCHEMA_PROGRAM} instructions together`;
  return undefined;
}

function nodeProblem(node: Record<string, unknown>, total: { size: number }, tally: PatternTally): string | undefined {
  if (typeof node.pattern === 'string') {
    const problem = patternProblem(node.pattern, total, tally);
    if (problem !== undefined) return problem;
  }
  if (isRecord(node.patternProperties)) {
    const keyPatterns = Object.keys(node.patternProperties).length;
    const maxKeys = node.maxProperties;
    if (keyPatterns > FREE_KEY_PATTERNS && (typeof maxKeys !== 'number' || maxKeys * keyPatterns > MAX_KEY_PATTERN_TESTS)) {
      return `has ${keyPatterns} patternProperties without maxProperties <= ${Math.floor(MAX_KEY_PATTERN_TESTS / keyPatterns)} (every key is tested against every pattern)`;
    }
    for (const key of Object.keys(node.patternProperties)) {
      const problem = patternProblem(key, total, tally);
      if (problem !== undefined) return `patternProperties ${problem}`;
    }
  }
  if (node.uniqueItems === true && !scalarItems(node.items)) {
    const max = node.maxItems;
    if (typeof max !== 'number' || max > MAX_UNIQUE_ITEMS) {
      return `has uniqueItems on an array of non-scalar items without maxItems <= ${MAX_UNIQUE_ITEMS} (checking it would take time quadratic in the array's length)`;
    }
  }
  return undefined;
}

/** Why a schema would be too costly to check requests against, or undefined. Walks iteratively (schemas are bounded by limits.ts first). */
export function schemaCostProblem(schema: unknown, tally: PatternTally = { patterns: 0 }): string | undefined {
  const stack: unknown[] = [schema];
  const total = { size: 0 };
  while (stack.length > 0) {
    const value = stack.pop();
    if (value === null || typeof value !== 'object') continue;
    if (Array.isArray(value)) {
      for (const item of value) stack.push(item);
      continue;
    }
    const node = value as Record<string, unknown>;
    const problem = nodeProblem(node, total, tally);
    if (problem !== undefined) return problem;
    for (const [key, child] of Object.entries(node)) {
      if (!DATA_KEYWORDS.has(key) && child !== null && typeof child === 'object') stack.push(child);
    }
  }
  return undefined;
}
