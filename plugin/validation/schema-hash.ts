import { createHash } from 'node:crypto';

/** Hashes of frozen schemas (the registry freezes its contracts deeply), which cannot change: computed once, not per request. */
const frozenHashes = new WeakMap<object, string>();

/**
 * Identity of a schema's content. The same schema reaches us in different objects (each announcement's own copy), so object identity
 * alone cannot tell "same schema" apart; the registry's copies keep key order, so plain JSON is stable.
 * A frozen schema's hash is remembered: the validators ask for it on every request.
 */
export function schemaHash(schema: unknown): string {
  const memo = typeof schema === 'object' && schema !== null && Object.isFrozen(schema);
  if (memo) {
    const known = frozenHashes.get(schema);
    if (known !== undefined) return known;
  }
  const hash = createHash('sha256')
    .update(JSON.stringify(schema) ?? 'undefined')
    .digest('base64url');
  if (memo) frozenHashes.set(schema, hash);
  return hash;
}
