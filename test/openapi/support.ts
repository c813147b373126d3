import type { Contract } from '../../plugin/contracts/types';
import * as users from '../../examples/users-service/contracts';
import * as auth from '../../examples/auth-service/contracts';

/** The reference services' contracts as the gateway discovers them. */
export function referenceContracts(): Contract[] {
  const out: Contract[] = [];
  for (const [mod, targetService] of [[users, 'users-service'], [auth, 'auth-service']] as const) {
    for (const value of Object.values(mod)) {
      if (value && typeof value === 'object' && 'messageType' in value) out.push({ ...(value as Omit<Contract, 'targetService'>), targetService });
    }
  }
  return out;
}

/**
 * Validates a document with @seriousme/openapi-schema-validator (OpenAPI 3.1 schema plus $ref resolution). The
 * package is ESM only, hence the dynamic import. The document is copied: resolveRefs rewrites what it is given.
 */
export async function validateOpenApi(document: unknown): Promise<{ valid: boolean; errors?: unknown; version?: string }> {
  const { Validator } = await import('@seriousme/openapi-schema-validator');
  const validator = new Validator();
  const result = await validator.validate(JSON.parse(JSON.stringify(document)));
  if (result.valid) validator.resolveRefs();
  return { valid: result.valid, errors: result.errors, version: validator.version };
}
