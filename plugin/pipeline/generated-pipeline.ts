import type { EndpointSpec } from '../contracts/route-table';
import type { RouteAction } from './resolve-contract';

/**
 * The request lifecycle of a generated route, in order (DESIGN.md "Data flow of one request"):
 *   cors ▸ rate-limit ▸ jwt-dev-auth ▸ permission ▸ schema-validation ▸ contract-router
 * Steps whose policy is not built yet are absent; each policy added here lands in every generated pipeline.
 */
export const GENERATED_POLICIES = ['jwt-dev-auth', 'permission', 'schema-validation', 'contract-router'] as const;

/** What each step needs to know about its route: which contract(s) it serves. */
export function routeAction(endpoint: EndpointSpec): RouteAction {
  const action: RouteAction = {};
  if (endpoint.dispatch) {
    action.dispatch = endpoint.dispatch;
    action.messageTypes = [...endpoint.messageTypes];
    return action;
  }
  if (endpoint.messageType) action.messageType = endpoint.messageType;
  if (endpoint.variants.length) action.variants = endpoint.variants.map((v) => ({ whenQuery: v.whenQuery, messageType: v.messageType }));
  return action;
}

/** The `policies:` list of one generated pipeline. */
export function pipelinePolicies(endpoint: EndpointSpec): Array<Record<string, unknown>> {
  const action = routeAction(endpoint);
  return GENERATED_POLICIES.map((name) => ({ [name]: [{ action }] }));
}
