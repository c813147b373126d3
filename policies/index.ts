import type { Runtime } from '../plugin/runtime';
import { routeTablePolicy } from './route-table';
import { requestTracePolicy } from './request-trace';
import { contractRateLimitPolicy } from './contract-rate-limit';
import { jwtDevAuthPolicy } from './jwt-dev-auth';
import { permissionPolicy } from './permission';
import { schemaValidationPolicy } from './schema-validation';
import { contractRouterPolicy } from './contract-router';
import { notFoundPolicy } from './not-found';

/**
 * The plugin's policies, each closing over the runtime it gets here, in the order of a generated pipeline
 * (plugin/pipeline/generated-pipeline.ts; `cors` is the host's; route-table only with `routing: table`), then the 404.
 */
export function createPolicies(runtime: Runtime) {
  return [
    routeTablePolicy(runtime),
    requestTracePolicy(),
    contractRateLimitPolicy(runtime),
    jwtDevAuthPolicy(runtime),
    permissionPolicy(runtime),
    schemaValidationPolicy(runtime),
    contractRouterPolicy(runtime),
    notFoundPolicy(runtime),
  ];
}
