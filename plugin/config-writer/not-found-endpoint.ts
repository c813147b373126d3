import type { WritableEndpoint } from './gateway-config';
import { POLICY_NAMES } from '../policy-names';

/**
 * The catch-all the writer appends after every contract endpoint: `/api` and everything under it, all methods
 * (the policy passes OPTIONS on). Express tries routes in order and the generated block comes after the hand-written
 * entries, so this only sees what nothing else served. Its name cannot clash with a contract endpoint's,
 * which always continues with a method (`contracts-get-…`).
 */
export function notFoundEndpoint(prefix: string): WritableEndpoint & { catchAll: true } {
  return {
    name: `${prefix}${POLICY_NAMES.notFound}`,
    method: '*',
    path: '/api',
    paths: ['/api', '/api/*'],
    catchAll: true,
  };
}

export function isCatchAll(endpoint: object): endpoint is WritableEndpoint & { catchAll: true } {
  return (endpoint as { catchAll?: unknown }).catchAll === true;
}

export function notFoundPolicies(): Array<Record<string, unknown>> {
  return [{ [POLICY_NAMES.notFound]: [{ action: {} }] }];
}
