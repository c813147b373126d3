import type { EndpointSpec } from '../contracts/endpoint-specs';

/**
 * The plugin's own router for `routing: table` (see Settings.routing): finds a request's generated
 * route in one walk down a tree of path segments, whatever the number of routes, where the host tries one
 * Express route after another. It answers as Express would have with one route per endpoint, in the route
 * table's order: static segments case-insensitive, a `:param` matching one non-empty segment (decoded), one
 * trailing slash ignored, HEAD served by GET; at each depth a static segment before a parameter, as
 * comparePaths orders the endpoints.
 */
export interface PathMatch<T> {
  value: T;
  params: Record<string, string>;
}

interface Node<T> {
  statics: Map<string, Node<T>>;
  /** In route-table order: the first parameter whose subtree matches wins. */
  params: Array<{ name: string; node: Node<T> }>;
  /** By method, for a route ending here. */
  ends: Map<string, T>;
}

const newNode = <T>(): Node<T> => ({ statics: new Map(), params: [], ends: new Map() });

/**
 * A path the table can hold: absolute, of static segments and `:name` parameters. Anything else (`*`, `?`, `(`,
 * and characters Express's path-to-regexp would read as regular-expression syntax) keeps Express's semantics
 * only on an endpoint of its own.
 */
const TABLE_SEGMENT = /^(?::[A-Za-z_][A-Za-z0-9_]*|[A-Za-z0-9._~%-]+)$/;

export function fitsTable(path: string): boolean {
  if (!path.startsWith('/')) return false;
  const segments = splitPath(path);
  return segments?.every((s) => TABLE_SEGMENT.test(s)) ?? false;
}

/** A malformed percent-escape in a parameter (Express answers 400 there too). */
export class ParamDecodeError extends Error {}

export class PathTable<T> {
  private readonly root: Node<T> = newNode();
  readonly size: number;

  /** Later entries for a method and path already held are ignored (the first registered wins, as in Express). */
  constructor(entries: ReadonlyArray<{ method: string; path: string; value: T }>) {
    let size = 0;
    for (const { method, path, value } of entries) {
      const segments = splitPath(path);
      if (!segments?.every((s) => TABLE_SEGMENT.test(s))) throw new Error(`path table: cannot hold ${path}`);
      let node = this.root;
      for (const segment of segments)
        node = segment.startsWith(':') ? paramChild(node, segment.slice(1)) : staticChild(node, segment.toLowerCase());
      const m = method.toUpperCase();
      if (!node.ends.has(m)) {
        node.ends.set(m, value);
        size++;
      }
    }
    this.size = size;
  }

  /** The route for a method and a request path (no query string), or undefined. Throws ParamDecodeError. */
  match(method: string, pathname: string): PathMatch<T> | undefined {
    const segments = splitPath(pathname);
    if (!segments) return undefined;
    const m = method === 'HEAD' ? 'GET' : method;
    const names: string[] = [];
    const values: string[] = [];
    const value = walk(this.root, segments, 0, m, names, values);
    if (value === undefined) return undefined;
    const params: Record<string, string> = {};
    for (let i = 0; i < names.length; i++) params[names[i] as string] = decodeParam(values[i] as string);
    return { value, params };
  }
}

function staticChild<T>(node: Node<T>, segment: string): Node<T> {
  let child = node.statics.get(segment);
  if (!child) node.statics.set(segment, (child = newNode()));
  return child;
}

function paramChild<T>(node: Node<T>, name: string): Node<T> {
  let entry = node.params.find((p) => p.name === name);
  if (!entry) node.params.push((entry = { name, node: newNode() }));
  return entry.node;
}

function walk<T>(
  node: Node<T>,
  segments: string[],
  depth: number,
  method: string,
  names: string[],
  values: string[],
): T | undefined {
  if (depth === segments.length) return node.ends.get(method);
  const segment = segments[depth] as string;
  const exact = node.statics.get(segment) ?? node.statics.get(segment.toLowerCase());
  if (exact) {
    const found = walk(exact, segments, depth + 1, method, names, values);
    if (found !== undefined) return found;
  }
  if (segment === '') return undefined;
  for (const p of node.params) {
    names.push(p.name);
    values.push(segment);
    const found = walk(p.node, segments, depth + 1, method, names, values);
    if (found !== undefined) return found;
    names.pop();
    values.pop();
  }
  return undefined;
}

/** The segments after the leading slash, one trailing slash ignored; undefined for a relative path. */
function splitPath(path: string): string[] | undefined {
  if (path.charCodeAt(0) !== 47 /* / */) return undefined;
  const end = path.length > 1 && path.endsWith('/') ? path.length - 1 : path.length;
  return end <= 1 ? [] : path.slice(1, end).split('/');
}

function decodeParam(value: string): string {
  if (!value.includes('%')) return value;
  try {
    return decodeURIComponent(value);
  } catch {
    throw new ParamDecodeError('a path parameter is not valid percent-encoding');
  }
}

/** The table of a route table's endpoints that fit, each held as `valueFor` says (unfitPaths names the others). */
export function endpointTable<T>(endpoints: readonly EndpointSpec[], valueFor: (e: EndpointSpec) => T): PathTable<T> {
  return new PathTable(
    endpoints.filter((e) => fitsTable(e.path)).map((e) => ({ method: e.method, path: e.path, value: valueFor(e) })),
  );
}

export function unfitPaths(endpoints: readonly EndpointSpec[]): string[] {
  return [...new Set(endpoints.filter((e) => !fitsTable(e.path)).map((e) => e.path))];
}
