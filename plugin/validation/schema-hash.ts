import { createHash } from 'node:crypto';

/**
 * Identity of a schema's content. Contracts reach us as fresh copies (the registry clones them), so
 * object identity cannot tell "same schema" apart; the registry's copies keep key order, so plain JSON is stable.
 */
export function schemaHash(schema: unknown): string {
  return createHash('sha256').update(JSON.stringify(schema) ?? 'undefined').digest('base64url');
}
