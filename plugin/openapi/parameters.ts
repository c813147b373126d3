import type { JsonSchema } from '../contracts/types';
import { pathParameterNames } from './paths';
import { requiredOf, topProperties } from './schema-embedding';

export interface ParameterObject {
  name: string;
  in: 'path' | 'query' | 'header';
  required: boolean;
  description?: string;
  schema: JsonSchema;
  style?: string;
  explode?: boolean;
  example?: unknown;
}

/** Path parameters of a route, typed from the first input schema that declares them (else string). */
export function pathParameters(expressPath: string, inputs: readonly JsonSchema[]): ParameterObject[] {
  return pathParameterNames(expressPath).map((name) => {
    const declared = inputs.map((s) => topProperties(s)?.[name]).find((p) => p !== undefined);
    return { name, in: 'path', required: true, schema: declared ?? { type: 'string' } };
  });
}

function typesOf(schema: JsonSchema): string[] {
  const t = schema.type;
  return Array.isArray(t) ? t.filter((x): x is string => typeof x === 'string') : typeof t === 'string' ? [t] : [];
}

/**
 * Query parameters from an input schema's top-level properties (GET/DELETE send their input in the query string),
 * leaving out what the path carries. Arrays are comma-separated, as the gateway reads them (`tags=a,b`).
 * `forceOptional`: the parameter is required by the contract but the operation also serves another contract.
 */
export function queryParameters(
  input: JsonSchema,
  skip: readonly string[],
  opts: { forceOptional?: boolean; note?: string } = {},
): ParameterObject[] {
  const props = topProperties(input);
  if (!props) return [];
  const required = new Set(requiredOf(input));
  const out: ParameterObject[] = [];
  for (const [name, schema] of Object.entries(props)) {
    if (skip.includes(name)) continue;
    const param: ParameterObject = { name, in: 'query', required: !opts.forceOptional && required.has(name), schema };
    const description = [typeof schema?.description === 'string' ? schema.description : undefined, opts.note]
      .filter(Boolean)
      .join(' ');
    if (description) param.description = description;
    if (schema && typeof schema === 'object' && typesOf(schema).includes('array')) {
      param.style = 'form';
      param.explode = false;
    }
    out.push(param);
  }
  return out;
}
