import type { JsonSchema } from '../contracts/types';

/**
 * Component names must match ^[a-zA-Z0-9.\-_]+$ (OpenAPI 3.1 "Components Object"). `part` holds no dot, so one
 * message type's names never meet another's.
 */
export function componentName(
  messageType: string,
  part: 'Input' | 'Output' | 'Request' | 'Reply' | 'ReplySuccess',
): string {
  return `${messageType.replace(/[^A-Za-z0-9._-]/g, '_')}.${part}`;
}

export function componentRef(name: string): string {
  return `#/components/schemas/${name}`;
}

/**
 * A contract schema made fit to live at `#/components/schemas/<name>` of the document. Its local `$ref`s
 * (`#/definitions/x`, `#/$defs/x`) pointed at the contract schema's own root; inside the document `#` is the
 * document, so they are re-rooted at the component. A root `$id` goes: two contracts may carry the same one, and
 * the re-rooted refs no longer need it. An object schema that names no property says `additionalProperties: true`,
 * which it already meant: type generators read the bare form as an object with no field at all. The caller's schema
 * is not modified.
 */
export function embedSchema(schema: JsonSchema, name: string): JsonSchema {
  const base = componentRef(name);
  const copy = reroot(structuredClone(schema), base) as JsonSchema;
  delete copy.$id;
  return copy;
}

// JSON Schema keywords whose value is a schema, an array of schemas, or a map of name → schema (draft-07 and 2020-12).
const ONE = new Set([
  'items',
  'additionalItems',
  'additionalProperties',
  'not',
  'if',
  'then',
  'else',
  'contains',
  'propertyNames',
  'unevaluatedItems',
  'unevaluatedProperties',
  'contentSchema',
]);
const MANY = new Set(['allOf', 'anyOf', 'oneOf', 'prefixItems']);
const MAP = new Set(['properties', 'patternProperties', 'definitions', '$defs', 'dependentSchemas', 'dependencies']);

/**
 * The schemas directly inside `schema`, each with the keyword that holds it and its name (a property or definition
 * name) or index (an item of allOf, anyOf, oneOf, prefixItems or a tuple's items); undefined for a single schema.
 */
export function childSchemas(
  schema: Record<string, unknown>,
): Array<{ keyword: string; at: string | number | undefined; child: unknown }> {
  const out: Array<{ keyword: string; at: string | number | undefined; child: unknown }> = [];
  for (const [keyword, value] of Object.entries(schema)) {
    if (ONE.has(keyword) || MANY.has(keyword)) {
      if (Array.isArray(value)) for (const [at, child] of value.entries()) out.push({ keyword, at, child });
      else if (ONE.has(keyword)) out.push({ keyword, at: undefined, child: value });
    } else if (MAP.has(keyword) && value !== null && typeof value === 'object' && !Array.isArray(value)) {
      for (const [at, child] of Object.entries(value as Record<string, unknown>)) out.push({ keyword, at, child });
    }
  }
  return out;
}

/** Walks schema positions only, so data (`const`, `enum`, `default`, a property named `$ref`) is never touched. */
function reroot(node: unknown, base: string): unknown {
  if (node === null || typeof node !== 'object' || Array.isArray(node)) return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node as Record<string, unknown>)) {
    if (key === '$ref' && typeof value === 'string' && value.startsWith('#')) out[key] = `${base}${value.slice(1)}`;
    else if (ONE.has(key)) out[key] = Array.isArray(value) ? value.map((v) => reroot(v, base)) : reroot(value, base);
    else if (MANY.has(key) && Array.isArray(value)) out[key] = value.map((v) => reroot(v, base));
    else if (MAP.has(key) && value !== null && typeof value === 'object' && !Array.isArray(value)) {
      out[key] = Object.fromEntries(
        Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, reroot(v, base)]),
      );
    } else out[key] = value;
  }
  if (isOpenObject(out)) out.additionalProperties = true;
  return out;
}

const SHAPING = [
  'properties',
  'patternProperties',
  'additionalProperties',
  'unevaluatedProperties',
  '$ref',
  'allOf',
  'anyOf',
  'oneOf',
];

/** An object schema that says nothing about its fields: any field is allowed. */
function isOpenObject(schema: Record<string, unknown>): boolean {
  const t = schema.type;
  const object = t === 'object' || (Array.isArray(t) && t.includes('object'));
  return object && SHAPING.every((k) => !(k in schema));
}

/** The top-level `properties` of an object schema, when it has them. */
export function topProperties(schema: JsonSchema): Record<string, JsonSchema> | undefined {
  const p = schema.properties;
  return p && typeof p === 'object' && !Array.isArray(p) ? (p as Record<string, JsonSchema>) : undefined;
}

export function requiredOf(schema: JsonSchema): string[] {
  return Array.isArray(schema.required) ? schema.required.filter((r): r is string => typeof r === 'string') : [];
}

/** The schema without the given top-level properties (they travel in the path, not the body). */
export function withoutProperties(schema: JsonSchema, names: readonly string[]): JsonSchema {
  const props = topProperties(schema);
  if (!props || names.length === 0) return schema;
  const copy: JsonSchema = { ...schema, properties: { ...props } };
  for (const n of names) delete (copy.properties as Record<string, unknown>)[n];
  const required = requiredOf(schema).filter((r) => !names.includes(r));
  if (required.length > 0) copy.required = required;
  else delete copy.required;
  return copy;
}
