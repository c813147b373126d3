import type { JsonSchema } from '../contracts/types';
import { cachedLinear } from './linear-regexp';
import { isRecord } from '../is-record';

type Schema = Record<string, unknown>;

/** A schema together with the document its local `$ref`s point into. */
interface Node {
  schema: Schema;
  root: Schema;
}

/** `#/$defs/user` inside `root`; other references (remote, by $id) are not followed. */
export function resolveRef(ref: string, root: Schema): Schema | undefined {
  if (ref === '#') return root;
  if (!ref.startsWith('#/')) return undefined;
  let at: unknown = root;
  for (const raw of ref.slice(2).split('/')) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (!isRecord(at) && !Array.isArray(at)) return undefined;
    at = (at as Record<string, unknown>)[key];
  }
  return isRecord(at) ? at : undefined;
}

/**
 * Every schema that applies to one value: the schema itself and what it pulls in through $ref and the
 * combinators. A property marked writeOnly in any branch is stripped: when in doubt, do not disclose.
 */
function expand(nodes: Node[]): Node[] {
  const out: Node[] = [];
  const seen = new Set<Schema>();
  const visit = (schema: unknown, root: Schema) => {
    if (!isRecord(schema) || seen.has(schema)) return;
    seen.add(schema);
    out.push({ schema, root });
    if (typeof schema.$ref === 'string') visit(resolveRef(schema.$ref, root), root);
    for (const k of ['allOf', 'anyOf', 'oneOf']) {
      const list = schema[k];
      if (Array.isArray(list)) for (const s of list) visit(s, root);
    }
    for (const k of ['then', 'else']) visit(schema[k], root);
    if (isRecord(schema.dependentSchemas)) for (const s of Object.values(schema.dependentSchemas)) visit(s, root);
  };
  for (const n of nodes) visit(n.schema, n.root);
  return out;
}

function marksWriteOnly(nodes: Node[]): boolean {
  return expand(nodes).some((n) => n.schema.writeOnly === true);
}

/** The schemas that describe property `key` of an object described by `nodes`. */
function propertySchemas(nodes: Node[], key: string): Node[] {
  const out: Node[] = [];
  for (const { schema, root } of nodes) {
    const props = isRecord(schema.properties) ? schema.properties : undefined;
    let named = false;
    if (props && Object.hasOwn(props, key) && isRecord(props[key])) {
      out.push({ schema: props[key] as Schema, root });
      named = true;
    }
    if (isRecord(schema.patternProperties)) {
      for (const [pattern, s] of Object.entries(schema.patternProperties)) {
        if (!isRecord(s)) continue;
        // On the linear engine, as ajv runs it; a pattern it cannot run was refused with its contract.
        const re = cachedLinear(pattern);
        if (!(re instanceof Error) && re.test(key)) {
          out.push({ schema: s, root });
          named = true;
        }
      }
    }
    if (!named && isRecord(schema.additionalProperties)) out.push({ schema: schema.additionalProperties, root });
  }
  return out;
}

/** The schemas that describe item `index` of an array described by `nodes` (draft-07 and 2020-12 forms). */
function itemSchemas(nodes: Node[], index: number): Node[] {
  const out: Node[] = [];
  for (const { schema, root } of nodes) {
    const tuple = Array.isArray(schema.prefixItems)
      ? schema.prefixItems
      : Array.isArray(schema.items)
        ? schema.items
        : undefined;
    if (tuple && index < tuple.length) {
      if (isRecord(tuple[index])) out.push({ schema: tuple[index] as Schema, root });
      continue;
    }
    const rest = tuple && Array.isArray(schema.items) ? schema.additionalItems : schema.items;
    if (isRecord(rest)) out.push({ schema: rest, root });
  }
  return out;
}

function strip(value: unknown, described: Node[]): unknown {
  if (described.length === 0) return value;
  const nodes = expand(described);
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    value.forEach((item, i) => {
      const next = strip(item, itemSchemas(nodes, i));
      if (next !== item) (copy ??= [...value])[i] = next;
    });
    return copy ?? value;
  }
  if (!isRecord(value)) return value;
  let copy: Record<string, unknown> | undefined;
  for (const [key, item] of Object.entries(value)) {
    const schemas = propertySchemas(nodes, key);
    if (schemas.length && marksWriteOnly(schemas)) {
      copy ??= { ...value };
      delete copy[key];
      continue;
    }
    const next = strip(item, schemas);
    if (next !== item) (copy ??= { ...value })[key] = next;
  }
  return copy ?? value;
}

/**
 * The value without the properties the schema marks `writeOnly: true`, at every depth the schema describes
 * (nested objects, array items, $ref'd definitions). The input is never modified: on the embedded bus a
 * service's result may be its own stored object. Returns the same value when nothing was stripped.
 */
export function stripWriteOnly(value: unknown, schema: JsonSchema): unknown {
  if (!mentionsWriteOnly(schema)) return value;
  return strip(value, [{ schema, root: schema }]);
}

/** Whether a schema says `writeOnly` anywhere; remembered for frozen schemas (the registry's), which cannot change. */
const mentions = new WeakMap<object, boolean>();

export function mentionsWriteOnly(schema: JsonSchema): boolean {
  const known = mentions.get(schema);
  if (known !== undefined) return known;
  // A false positive (a property named writeOnly) only costs the full walk.
  const found = (JSON.stringify(schema) ?? '').includes('"writeOnly"');
  if (Object.isFrozen(schema)) mentions.set(schema, found);
  return found;
}
