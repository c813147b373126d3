import { createHash } from 'node:crypto';

/** JSON with object keys sorted at every level: two inputs that differ only in key order are the same request. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(value).sort()) out[k] = canonical((value as Record<string, unknown>)[k]);
    return out;
  }
  return value;
}

/** What a key is bound to at its first use: the message type and the input (body, path and query merged). */
export function requestFingerprint(messageType: string, input: Record<string, unknown>): string {
  return createHash('sha256')
    .update(JSON.stringify([messageType, canonical(input)]))
    .digest('base64url');
}
