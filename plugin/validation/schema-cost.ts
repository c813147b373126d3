import { cachedLinear } from './linear-regexp';
import { isRecord } from '../is-record';

/*
 * What a schema would make every request cost, checked once when its contract is announced, so that a contract
 * that could tie up the gateway is refused with the reason rather than served: a `pattern` (or `patternProperties`
 * key) that the linear-time engine cannot run or whose program is large (RE2's time is linear in the input but
 * grows with the program: `^(?:(?:a{1,10}){1,10}){1,10}$`, 2,003 instructions, took 250 ms on 1,000 characters),
 * a `uniqueItems` that ajv checks pair by pair (items that are not of scalar types) on arrays of unbounded
 * length, and a `oneOf`/`anyOf` of many branches that every item of such an array is tried against.
 */

/** The longest array whose items ajv may compare pair by pair (uniqueItems without scalar item types). */
export const MAX_UNIQUE_ITEMS = 500;

/** RE2 instructions one pattern may compile to, and all the patterns of one schema together. */
const MAX_PATTERN_PROGRAM = 500;
const MAX_SCHEMA_PROGRAM = 4000;
/**
 * Characters of one pattern, and patterns in one announcement: compiling them is this check's own cost (about
 * 10 µs for a short pattern; a 256 KB announcement holds some 8,000, which took 75 ms to check).
 */
const MAX_PATTERN_LENGTH = 1000;
const MAX_PATTERNS_PER_ANNOUNCEMENT = 256;

/**
 * Every key of an object is tested against every `patternProperties` pattern (about 1 µs each on RE2): 64 patterns
 * took 2.5 s on a 1 MB body of 100,000 keys. Up to FREE_KEY_PATTERNS need no bound; more need `maxProperties` with
 * keys × patterns at most MAX_KEY_PATTERN_TESTS.
 */
const FREE_KEY_PATTERNS = 2;
const MAX_KEY_PATTERN_TESTS = 20_000;

/**
 * Every value a repeated subschema meets is tried against each branch of a `oneOf`/`anyOf` there: 1,300 branches
 * against 60,000 items took 16 s of one request. Up to FREE_BRANCHES need no bound; more need the repetitions above
 * them (maxItems, maxProperties) bounded so that repetitions × branches is at most MAX_BRANCH_TESTS. A definition
 * (`$defs`) counts as repeated without bound: a `$ref` may use it anywhere.
 */
export const FREE_BRANCHES = 8;
export const MAX_BRANCH_TESTS = 20_000;

/** Keywords whose subschemas apply to each item of an array, and to each member of an object. */
const PER_ITEM = new Set(['items', 'prefixItems', 'additionalItems', 'contains', 'unevaluatedItems']);
const PER_MEMBER = new Set(['additionalProperties', 'patternProperties', 'unevaluatedProperties', 'propertyNames']);
const DEFINITIONS = new Set(['$defs', 'definitions']);
/** Keywords whose value maps names to subschemas. */
const MAPS = new Set(['properties', 'patternProperties', 'dependentSchemas', '$defs', 'definitions']);

/** The patterns counted so far in one announcement (its schemas share one). */
export interface PatternTally {
  patterns: number;
}

/** Keywords whose values are data, not schemas: a `pattern` member in them is an example, not a pattern. */
const DATA_KEYWORDS = new Set(['enum', 'const', 'default', 'examples', 'example']);
const SCALAR_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'null']);

/** ajv compares items by hashing (linear) only when `items` declares scalar types and nothing else. */
function scalarItems(items: unknown): boolean {
  if (!isRecord(items)) return false;
  const types = Array.isArray(items.type) ? items.type : [items.type];
  return types.length > 0 && types.every((t) => typeof t === 'string' && SCALAR_TYPES.has(t));
}

/** Why `pattern` cannot be used, or undefined; adds its program to `total`. */
function patternProblem(pattern: string, total: { size: number }, tally: PatternTally): string | undefined {
  if (++tally.patterns > MAX_PATTERNS_PER_ANNOUNCEMENT)
    return `has more than ${MAX_PATTERNS_PER_ANNOUNCEMENT} patterns in one announcement`;
  if (pattern.length > MAX_PATTERN_LENGTH)
    return `has a pattern of ${pattern.length} characters, over ${MAX_PATTERN_LENGTH}`;
  const re = cachedLinear(pattern);
  if (re instanceof Error) return re.message;
  if (re.programSize > MAX_PATTERN_PROGRAM)
    return `pattern ${JSON.stringify(pattern.slice(0, 80))} compiles to ${re.programSize} instructions, over ${MAX_PATTERN_PROGRAM}`;
  total.size += re.programSize;
  if (total.size > MAX_SCHEMA_PROGRAM)
    return `patterns compile to more than ${MAX_SCHEMA_PROGRAM} instructions together`;
  return undefined;
}

/** How many times a child under `key` of `node` may run per request, given the node runs `times` times. */
function childTimes(node: Record<string, unknown>, key: string, times: number): number {
  if (DEFINITIONS.has(key)) return Infinity;
  if (PER_ITEM.has(key)) return times * (typeof node.maxItems === 'number' ? node.maxItems : Infinity);
  if (PER_MEMBER.has(key)) return times * (typeof node.maxProperties === 'number' ? node.maxProperties : Infinity);
  return times;
}

function branchProblem(node: Record<string, unknown>, times: number): string | undefined {
  for (const keyword of ['oneOf', 'anyOf']) {
    const branches = node[keyword];
    if (!Array.isArray(branches) || branches.length <= FREE_BRANCHES || times * branches.length <= MAX_BRANCH_TESTS)
      continue;
    return `has a ${keyword} of ${branches.length} branches where values repeat without maxItems/maxProperties keeping repetitions × branches <= ${MAX_BRANCH_TESTS} (every value is tried against every branch)`;
  }
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
    if (
      keyPatterns > FREE_KEY_PATTERNS &&
      (typeof maxKeys !== 'number' || maxKeys * keyPatterns > MAX_KEY_PATTERN_TESTS)
    ) {
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
  // Each entry: a value, how many times per request its schemas may run (1 at the root), and whether it is a map of
  // names to schemas (`properties`, `$defs`, …), whose names are not keywords.
  const stack: [unknown, number, boolean][] = [[schema, 1, false]];
  const total = { size: 0 };
  while (stack.length > 0) {
    const [value, times, map] = stack.pop()!;
    if (value === null || typeof value !== 'object') continue;
    if (Array.isArray(value) || map) {
      for (const item of Object.values(value)) stack.push([item, times, false]);
      continue;
    }
    const node = value as Record<string, unknown>;
    const problem = nodeProblem(node, total, tally) ?? branchProblem(node, times);
    if (problem !== undefined) return problem;
    for (const [key, child] of Object.entries(node)) {
      if (!DATA_KEYWORDS.has(key) && child !== null && typeof child === 'object')
        stack.push([child, childTimes(node, key, times), MAPS.has(key)]);
    }
  }
  return undefined;
}
