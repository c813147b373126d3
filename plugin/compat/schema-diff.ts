import { canonical } from '../contracts/canonical';
import type { JsonSchema } from '../contracts/types';
import { resolveRef } from '../validation/write-only';
import { isRecord } from '../is-record';

/** Which way values flow: a client sends `input` (the gateway validates it) and reads `output`. */
export type Direction = 'input' | 'output';

/** One difference between two versions of a schema, as a client sees it. */
export interface SchemaChange {
  breaking: boolean;
  /** A fixed name per kind of change (docs/compatibility.md lists them). */
  rule: string;
  /** Where in the schema: `input.address.city`, `output.items[]`; the direction alone for the root. */
  at: string;
  message: string;
}

type Node = Record<string, unknown>;

/** Bounds where a smaller value accepts less: lowering one narrows. */
const UPPER_BOUNDS = ['maxLength', 'maximum', 'exclusiveMaximum', 'maxItems', 'maxProperties'] as const;
/** Bounds where a larger value accepts less: raising one narrows. */
const LOWER_BOUNDS = ['minLength', 'minimum', 'exclusiveMinimum', 'minItems', 'minProperties'] as const;
/** Constraints whose change cannot be ordered: any new or changed value may refuse what passed before. */
const OPAQUE_CONSTRAINTS = ['pattern', 'format', 'multipleOf', 'const', 'contentEncoding', 'contentMediaType'] as const;
/** Keywords this classifier does not reason about: any change to them is reported as breaking, to be safe. */
const UNANALYSED = [
  'allOf',
  'anyOf',
  'oneOf',
  'not',
  'if',
  'then',
  'else',
  'patternProperties',
  'propertyNames',
  'dependentRequired',
  'dependentSchemas',
  'dependencies',
  'prefixItems',
  'contains',
  'minContains',
  'maxContains',
  'unevaluatedProperties',
  'unevaluatedItems',
  '$dynamicRef',
  '$recursiveRef',
] as const;
/** Deepest nesting followed; a contract's schemas are bounded by the announcement limits well before this. */
const MAX_DEPTH = 64;

interface Walk {
  direction: Direction;
  oldRoot: unknown;
  newRoot: unknown;
  changes: SchemaChange[];
  /** Pairs of references already compared, so a recursive schema ends (a type met twice is reported where first met). */
  seen: Set<string>;
  /** Both roots hold the same definitions: equal text that references them means equal schemas. */
  sameDefinitions: boolean;
}

/**
 * The differences between two versions of a contract's input or output schema that a client can notice, each marked
 * breaking or compatible (docs/compatibility.md, "Rules"). Pure; never throws on odd schemas.
 */
export function diffSchema(oldSchema: JsonSchema, newSchema: JsonSchema, direction: Direction): SchemaChange[] {
  const definitions = (s: JsonSchema): string => canonical([s.$defs, s.definitions]);
  const walk: Walk = {
    direction,
    oldRoot: oldSchema,
    newRoot: newSchema,
    changes: [],
    seen: new Set(),
    sameDefinitions: definitions(oldSchema) === definitions(newSchema),
  };
  compare(walk, oldSchema, newSchema, direction, 0);
  return walk.changes;
}

/** The schema a node stands for: its `$ref` target when it is only a reference (siblings of `$ref` kept). */
function deref(node: unknown, root: unknown): unknown {
  for (let hops = 0; hops < 16 && isRecord(node) && typeof node.$ref === 'string'; hops++) {
    const target = isRecord(root) ? resolveRef(node.$ref, root) : undefined;
    if (!target) return node;
    const { $ref: _ref, ...siblings } = node;
    node = { ...target, ...siblings };
  }
  return node;
}

/** Equal as clients see them: equal text, unless it holds a reference whose target may differ between the roots. */
function same(walk: Walk, a: unknown, b: unknown): boolean {
  const text = canonical(a);
  return text === canonical(b) && (walk.sameDefinitions || !text.includes('"$ref"'));
}

function add(walk: Walk, breaking: boolean, rule: string, at: string, message: string): void {
  walk.changes.push({ breaking, rule, at, message });
}

function compare(walk: Walk, oldRaw: unknown, newRaw: unknown, at: string, depth: number): void {
  if (depth > MAX_DEPTH) return;
  const refKey =
    isRecord(oldRaw) && isRecord(newRaw) && (typeof oldRaw.$ref === 'string' || typeof newRaw.$ref === 'string')
      ? `${String(oldRaw.$ref)}|${String(newRaw.$ref)}`
      : undefined;
  if (refKey !== undefined) {
    if (walk.seen.has(refKey)) return;
    walk.seen.add(refKey);
  }
  const oldSchema = deref(oldRaw, walk.oldRoot);
  const newSchema = deref(newRaw, walk.newRoot);
  if (same(walk, oldSchema, newSchema)) return;
  if (!isRecord(oldSchema) || !isRecord(newSchema)) {
    compareBooleanSchemas(walk, oldSchema, newSchema, at);
    return;
  }
  compareTypes(walk, oldSchema, newSchema, at);
  compareEnums(walk, oldSchema, newSchema, at);
  compareBounds(walk, oldSchema, newSchema, at);
  compareOpaque(walk, oldSchema, newSchema, at);
  compareUnanalysed(walk, oldSchema, newSchema, at);
  compareObjects(walk, oldSchema, newSchema, at, depth);
  compareItems(walk, oldSchema, newSchema, at, depth);
}

/** `true`/`false` schemas (or a node against one): anything else is a change this classifier cannot order. */
function compareBooleanSchemas(walk: Walk, oldSchema: unknown, newSchema: unknown, at: string): void {
  const acceptsAll = (s: unknown): boolean => s === true || (isRecord(s) && Object.keys(s).length === 0);
  if (acceptsAll(oldSchema) && acceptsAll(newSchema)) return;
  if (walk.direction === 'input' && acceptsAll(newSchema)) {
    add(walk, false, 'input-widened', at, `${at} accepts anything now`);
    return;
  }
  add(walk, true, 'schema-changed', at, `${at} changed in a way that is not analysed; treated as breaking`);
}

/** A schema's types; undefined: any type. `integer` is within `number`. */
function typesOf(schema: Node): Set<string> | undefined {
  const t = schema.type;
  if (typeof t === 'string') return new Set([t]);
  if (Array.isArray(t)) return new Set(t.filter((x): x is string => typeof x === 'string'));
  return undefined;
}

function accepts(types: Set<string> | undefined, type: string): boolean {
  return types === undefined || types.has(type) || (type === 'integer' && types.has('number'));
}

function compareTypes(walk: Walk, oldSchema: Node, newSchema: Node, at: string): void {
  const before = typesOf(oldSchema);
  const after = typesOf(newSchema);
  const list = (s: Set<string> | undefined): string => (s === undefined ? 'any' : [...s].sort().join('|'));
  if (list(before) === list(after)) return;
  const lost = before === undefined ? after !== undefined : [...before].some((t) => !accepts(after, t));
  const gained = after === undefined ? before !== undefined : [...after].some((t) => !accepts(before, t));
  const text = `${at} type ${list(before)} → ${list(after)}`;
  if (walk.direction === 'input') {
    if (lost) add(walk, true, 'input-type-narrowed', at, `${text}: values sent today are refused`);
    else add(walk, false, 'input-type-widened', at, text);
    return;
  }
  // A client parses what it reads by type: a type it never got, or one it no longer gets, both change its code path.
  if (lost || gained) add(walk, true, 'output-type-changed', at, `${text}: clients parse a type they did not expect`);
}

function compareEnums(walk: Walk, oldSchema: Node, newSchema: Node, at: string): void {
  const before = Array.isArray(oldSchema.enum) ? oldSchema.enum : undefined;
  const after = Array.isArray(newSchema.enum) ? newSchema.enum : undefined;
  if (after === undefined) {
    if (before !== undefined)
      add(walk, false, `${walk.direction}-enum-lifted`, at, `${at} is no longer limited to a list of values`);
    return;
  }
  if (before === undefined) {
    add(walk, true, `${walk.direction}-enum-added`, at, `${at} is limited to ${after.length} value(s) now`);
    return;
  }
  const kept = new Set(after.map(canonical));
  const had = new Set(before.map(canonical));
  const removed = before.filter((v) => !kept.has(canonical(v)));
  const added = after.filter((v) => !had.has(canonical(v)));
  if (removed.length > 0)
    add(
      walk,
      true,
      `${walk.direction}-enum-value-removed`,
      at,
      `${at} enum value(s) removed: ${removed.map((v) => JSON.stringify(v)).join(', ')}`,
    );
  if (added.length > 0)
    add(
      walk,
      false,
      `${walk.direction}-enum-value-added`,
      at,
      `${at} enum value(s) added: ${added.map((v) => JSON.stringify(v)).join(', ')}`,
    );
}

function numberOf(schema: Node, key: string): number | undefined {
  const v = schema[key];
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

function compareBounds(walk: Walk, oldSchema: Node, newSchema: Node, at: string): void {
  const bound = (key: string, narrows: (before: number | undefined, after: number) => boolean): void => {
    const before = numberOf(oldSchema, key);
    const after = numberOf(newSchema, key);
    if (before === after) return;
    const text = `${at} ${key} ${before ?? 'none'} → ${after ?? 'none'}`;
    if (after !== undefined && narrows(before, after)) add(walk, true, `${walk.direction}-narrowed`, at, text);
    else add(walk, false, `${walk.direction}-widened`, at, text);
  };
  for (const key of UPPER_BOUNDS) bound(key, (before, after) => before === undefined || after < before);
  for (const key of LOWER_BOUNDS) bound(key, (before, after) => before === undefined || after > before);
  if (newSchema.uniqueItems === true && oldSchema.uniqueItems !== true)
    add(walk, true, `${walk.direction}-narrowed`, at, `${at} items must be unique now`);
}

function compareOpaque(walk: Walk, oldSchema: Node, newSchema: Node, at: string): void {
  for (const key of OPAQUE_CONSTRAINTS) {
    const [before, after] = [oldSchema[key], newSchema[key]];
    if (canonical(before) === canonical(after)) continue;
    if (after === undefined) add(walk, false, `${walk.direction}-widened`, at, `${at} ${key} removed`);
    else
      add(
        walk,
        true,
        `${walk.direction}-narrowed`,
        at,
        `${at} ${key} ${before === undefined ? 'added' : 'changed'}: ${JSON.stringify(after).slice(0, 80)}`,
      );
  }
}

function compareUnanalysed(walk: Walk, oldSchema: Node, newSchema: Node, at: string): void {
  for (const key of UNANALYSED) {
    if (canonical(oldSchema[key]) === canonical(newSchema[key])) continue;
    add(walk, true, 'schema-changed', at, `${at} ${key} changed; not analysed, treated as breaking`);
  }
}

function requiredOf(schema: Node): Set<string> {
  return new Set(
    Array.isArray(schema.required) ? schema.required.filter((r): r is string => typeof r === 'string') : [],
  );
}

function propertiesOf(schema: Node): Node {
  return isRecord(schema.properties) ? schema.properties : {};
}

function compareObjects(walk: Walk, oldSchema: Node, newSchema: Node, at: string, depth: number): void {
  const [oldProps, newProps] = [propertiesOf(oldSchema), propertiesOf(newSchema)];
  const [oldRequired, newRequired] = [requiredOf(oldSchema), requiredOf(newSchema)];
  const input = walk.direction === 'input';
  for (const name of Object.keys(oldProps)) {
    const where = `${at}.${name}`;
    if (Object.hasOwn(newProps, name)) {
      compare(walk, oldProps[name], newProps[name], where, depth + 1);
    } else if (!input) {
      add(walk, true, 'output-property-removed', where, `${where} removed: clients reading it get nothing`);
    } else if (newSchema.additionalProperties === false) {
      add(
        walk,
        true,
        'input-property-removed',
        where,
        `${where} removed and additional properties are refused: requests sending it fail`,
      );
    } else {
      add(walk, false, 'input-property-removed', where, `${where} removed; still accepted as an additional property`);
    }
  }
  for (const name of Object.keys(newProps)) {
    if (!Object.hasOwn(oldProps, name))
      add(walk, false, `${walk.direction}-property-added`, `${at}.${name}`, `${at}.${name} added`);
  }
  for (const name of newRequired) {
    if (oldRequired.has(name)) continue;
    if (input)
      add(
        walk,
        true,
        'input-property-required',
        `${at}.${name}`,
        `${at}.${name} is required now: requests without it fail`,
      );
    else add(walk, false, 'output-property-required', `${at}.${name}`, `${at}.${name} is always present now`);
  }
  for (const name of oldRequired) {
    if (newRequired.has(name)) continue;
    // A property removed altogether is reported once, above.
    if (!input && Object.hasOwn(newProps, name))
      add(walk, true, 'output-property-optional', `${at}.${name}`, `${at}.${name} may be missing now`);
    if (input) add(walk, false, 'input-property-optional', `${at}.${name}`, `${at}.${name} is optional now`);
  }
  compareAdditional(walk, oldSchema, newSchema, at, depth);
}

function compareAdditional(walk: Walk, oldSchema: Node, newSchema: Node, at: string, depth: number): void {
  const [before, after] = [oldSchema.additionalProperties, newSchema.additionalProperties];
  if (same(walk, before, after)) return;
  if (isRecord(before) && isRecord(after)) {
    compare(walk, before, after, `${at}.*`, depth + 1);
    return;
  }
  if (walk.direction === 'output') return;
  const open = (v: unknown): boolean => v === undefined || v === true;
  if (open(after)) add(walk, false, 'input-widened', at, `${at} accepts additional properties now`);
  else add(walk, true, 'input-narrowed', at, `${at} refuses additional properties it accepted`);
}

function compareItems(walk: Walk, oldSchema: Node, newSchema: Node, at: string, depth: number): void {
  const [before, after] = [oldSchema.items, newSchema.items];
  if (same(walk, before, after)) return;
  if (before === undefined || after === undefined || Array.isArray(before) || Array.isArray(after)) {
    if (walk.direction === 'input' && after === undefined)
      add(walk, false, 'input-widened', `${at}[]`, `${at}[] accepts any item now`);
    else add(walk, true, 'schema-changed', `${at}[]`, `${at}[] items changed; not analysed, treated as breaking`);
    return;
  }
  compare(walk, before, after, `${at}[]`, depth + 1);
}
