/**
 * Express route paths → OpenAPI path templates. `:name` (with an optional `(pattern)` and `?`/`*`/`+`
 * modifier) becomes `{name}`; everything else is kept as written.
 */
const PARAM = /:([A-Za-z_][A-Za-z0-9_]*)(\([^)]*\))?[?*+]?/g;

export function toOpenApiPath(expressPath: string): string {
  return expressPath.replace(PARAM, (_m, name: string) => `{${name}}`);
}

/** The path parameter names of an Express path, in order. */
export function pathParameterNames(expressPath: string): string[] {
  return [...expressPath.matchAll(PARAM)].map((m) => m[1] as string);
}
