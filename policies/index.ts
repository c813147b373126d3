import type { RequestServices } from '../plugin/parts/request-services';
import { routeTablePolicy } from './route-table';
import { requestTracePolicy } from './request-trace';
import { contractRateLimitPolicy } from './contract-rate-limit';
import { jwtDevAuthPolicy } from './jwt-dev-auth';
import { permissionPolicy } from './permission';
import { schemaValidationPolicy } from './schema-validation';
import { contractRouterPolicy } from './contract-router';
import { notFoundPolicy } from './not-found';

/**
 * The plugin's policies, each closing over the request services it gets here (each factory takes the fields it reads), in the order of a generated pipeline
 * (plugin/pipeline/generated-pipeline.ts; `cors` is the host's; route-table only with `routing: table`), then the 404.
 */
export function createPolicies(services: RequestServices) {
  return [
    routeTablePolicy(services),
    requestTracePolicy(),
    contractRateLimitPolicy(services),
    jwtDevAuthPolicy(services),
    permissionPolicy(services),
    schemaValidationPolicy(services),
    contractRouterPolicy(services),
    notFoundPolicy(services),
  ];
}
