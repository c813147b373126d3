import { GatewayError } from '../errors/gateway-error';
import type { JsonSchema } from '../contracts/types';

/** Keys that could reach an object's prototype if anything downstream merged input carelessly. */
const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);
const NUMERIC = /^-?(0|[1-9]\d{0,15})(\.\d+)?$/;

type Params = Record<string, unknown>;

export interface InputParts {
  body: Params;
  query: Params;
  params: Params;
  schema?: JsonSchema;
}

/**
 * The message input: query string, then body, then path parameters (each passed to
 * the handler as the input field of the same name). A body field that contradicts the path is refused
 * rather than silently overwritten.
 */
export function buildInput({ body, query, params, schema }: InputParts): Record<string, unknown> {
  const props = propertiesOf(schema);
  const input: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(query)) {
    if (FORBIDDEN_KEYS.has(key)) continue;
    input[key] = coerceQueryValue(value, props?.[key], props !== undefined);
  }
  for (const [key, value] of Object.entries(body)) {
    if (FORBIDDEN_KEYS.has(key)) continue;
    input[key] = stripForbidden(value);
  }
  for (const [key, raw] of Object.entries(params)) {
    if (FORBIDDEN_KEYS.has(key) || raw === undefined) continue;
    const value = coerceByType(raw, props?.[key]);
    if (key in body && !sameValue(body[key], value)) {
      throw new GatewayError('VALIDATION_ERROR', `Field "${key}" in the body does not match the path`, {
        details: { [key]: 'must match the path parameter' },
        extra: { validationErrors: [{ field: key, message: 'must match the path parameter' }] },
      });
    }
    input[key] = value;
  }
  return input;
}

function propertiesOf(schema?: JsonSchema): Record<string, JsonSchema> | undefined {
  const p = schema?.properties;
  return p && typeof p === 'object' ? (p as Record<string, JsonSchema>) : undefined;
}

function typesOf(prop?: JsonSchema): string[] {
  const t = prop?.type;
  return Array.isArray(t) ? t.map(String) : typeof t === 'string' ? [t] : [];
}

/**
 * Query strings only carry text. Where the contract's schema names a type, convert to it; where there is
 * no schema at all, numbers are recognisable (a client's numbers arrive as numbers).
 */
function coerceQueryValue(value: unknown, prop: JsonSchema | undefined, hasSchema: boolean): unknown {
  const types = typesOf(prop);
  if (types.includes('array')) {
    const items = Array.isArray(value)
      ? value
      : typeof value === 'string'
        ? value.split(',').filter((s) => s !== '')
        : [value];
    const itemSchema = prop?.items && typeof prop.items === 'object' ? (prop.items as JsonSchema) : undefined;
    return items.map((v) => coerceByType(v, itemSchema));
  }
  if (types.length > 0) return coerceByType(Array.isArray(value) ? value[value.length - 1] : value, prop);
  if (!hasSchema && typeof value === 'string' && NUMERIC.test(value)) return Number(value);
  return stripForbidden(value);
}

function coerceByType(value: unknown, prop?: JsonSchema): unknown {
  if (typeof value !== 'string') return value;
  const types = typesOf(prop);
  if ((types.includes('integer') || types.includes('number')) && !types.includes('string') && NUMERIC.test(value)) {
    return Number(value);
  }
  if (types.includes('boolean') && !types.includes('string') && (value === 'true' || value === 'false')) {
    return value === 'true';
  }
  return value;
}

function sameValue(a: unknown, b: unknown): boolean {
  return a === b || (a !== null && b !== null && String(a) === String(b) && typeof a !== 'object');
}

/** Copies nested JSON without the forbidden keys. */
function stripForbidden(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(stripForbidden);
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) if (!FORBIDDEN_KEYS.has(k)) out[k] = stripForbidden(v);
    return out;
  }
  return value;
}
