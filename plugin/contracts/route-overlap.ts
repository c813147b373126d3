/**
 * Whether two routes can take the same request, the way the host matches them: paths are case-insensitive, a
 * trailing slash does not count, a parameter (`:id`, whatever its name) matches any one segment, and a segment with
 * a pattern character (`*`, `?`, `(`, `+`) may match anything from there on. Ownership compares routes by this, not
 * by their text: `/api/LOGIN` or `/api/users/:aaa` would otherwise take `/api/login` or `/api/users/:userId`.
 */
export interface RouteShape {
  method: string;
  segments: string[];
  /** Index of the first segment with a pattern character, or -1. */
  wildFrom: number;
}

const PARAM = ':';
const PATTERN = /[*?()+]/;

export function routeShape(method: string, path: string): RouteShape {
  const segments = path
    .toLowerCase()
    .replace(/\/+$/, '')
    .split('/')
    .slice(1)
    .map((s) => (s.startsWith(':') && !PATTERN.test(s) ? PARAM : s));
  return { method: method.toUpperCase(), segments, wildFrom: segments.findIndex((s) => PATTERN.test(s)) };
}

function segmentsMeet(a: string, b: string): boolean {
  return a === b || a === PARAM || b === PARAM;
}

export function overlaps(a: RouteShape, b: RouteShape): boolean {
  if (a.method !== b.method) return false;
  const wild = [a.wildFrom, b.wildFrom].filter((i) => i >= 0);
  const upTo = wild.length > 0 ? Math.min(...wild) : -1;
  if (upTo < 0 && a.segments.length !== b.segments.length) return false;
  const n = upTo >= 0 ? Math.min(upTo, a.segments.length, b.segments.length) : a.segments.length;
  for (let i = 0; i < n; i++) if (!segmentsMeet(a.segments[i] as string, b.segments[i] as string)) return false;
  return true;
}

/**
 * The routes held so far and by whom, bucketed by method and first two segments (`/api/<name>`, always literal for
 * derived routes), so that finding an overlap looks at a route's neighbours rather than at every route.
 */
export class RouteHolders {
  private readonly buckets = new Map<string, Array<{ shape: RouteShape; route: string; service: string }>>();

  private static key(shape: RouteShape): string {
    const [first, second] = shape.segments;
    const literal = (s: string | undefined) => s !== undefined && s !== PARAM && !PATTERN.test(s);
    return literal(first) && literal(second) ? `${shape.method} /${first}/${second}` : `${shape.method} *`;
  }

  /** A route of another service than `service` that can take the same requests as `route`, and its holder. */
  heldByOther(method: string, path: string, service: string): { route: string; service: string } | undefined {
    const shape = routeShape(method, path);
    const key = RouteHolders.key(shape);
    const wildKey = `${shape.method} *`;
    const candidates =
      key === wildKey
        ? [...this.buckets].filter(([k]) => k.startsWith(`${shape.method} `)).flatMap(([, v]) => v)
        : [...(this.buckets.get(key) ?? []), ...(this.buckets.get(wildKey) ?? [])];
    const hit = candidates.find((h) => h.service !== service && overlaps(h.shape, shape));
    return hit && { route: hit.route, service: hit.service };
  }

  add(method: string, path: string, service: string): void {
    const shape = routeShape(method, path);
    const key = RouteHolders.key(shape);
    const list = this.buckets.get(key) ?? [];
    list.push({ shape, route: `${method} ${path}`, service });
    this.buckets.set(key, list);
  }
}
