/** Component sections reached by `$ref` (security schemes are named by the `security` lists instead). */
const REFERENCED_SECTIONS = ['schemas', 'responses', 'parameters', 'requestBodies', 'headers', 'examples'];

const COMPONENT_REF = /^#\/components\/([^/]+)\/([^/]+)/;

/**
 * The components without the entries nothing in `paths` reaches, directly or through other components: a contract's
 * input schema whose fields all travel as parameters, the output of a 204 route, a debug schema while debug is off.
 * Lint rules and generated clients treat an unused component as a mistake.
 */
export function withoutUnusedComponents(
  paths: unknown,
  components: Record<string, Record<string, unknown>>,
): Record<string, Record<string, unknown>> {
  const used = new Set<string>();
  const pending: unknown[] = [paths];
  while (pending.length > 0) {
    for (const ref of refsIn(pending.pop())) {
      const m = COMPONENT_REF.exec(ref);
      if (!m) continue;
      const key = `${m[1]}/${decodePointer(m[2] as string)}`;
      if (used.has(key)) continue;
      used.add(key);
      pending.push(components[m[1] as string]?.[decodePointer(m[2] as string)]);
    }
  }
  const out: Record<string, Record<string, unknown>> = {};
  for (const [section, entries] of Object.entries(components)) {
    if (!REFERENCED_SECTIONS.includes(section)) {
      out[section] = entries;
      continue;
    }
    const kept = Object.entries(entries).filter(([name]) => used.has(`${section}/${name}`));
    if (kept.length > 0) out[section] = Object.fromEntries(kept);
  }
  return out;
}

/** Every `$ref` string in a value, at any depth. */
function refsIn(value: unknown, found: string[] = []): string[] {
  if (Array.isArray(value)) {
    for (const v of value) refsIn(v, found);
  } else if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (k === '$ref' && typeof v === 'string') found.push(v);
      else refsIn(v, found);
    }
  }
  return found;
}

function decodePointer(segment: string): string {
  return segment.replace(/~1/g, '/').replace(/~0/g, '~');
}
