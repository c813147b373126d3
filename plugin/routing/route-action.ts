import type { EndpointSpec } from '../contracts/endpoint-specs';
import type { ContractKind } from '../contracts/types';

/**
 * The action every generated pipeline step carries: which contract(s) the route serves.
 * - messageType: the route's contract, and `kind` what the route does with it (create, get, command, …: it decides
 *   the success status);
 * - variants: another contract for the same route when a query parameter is present (GET /api/users?userId=);
 * - dispatch: a generic route (/api/actions, /api/data) where the caller names the message type, limited to
 *   `messageTypes`; its `kind` is `command` (body) or `query` (query string).
 * A hand-written action names no kind: the router then derives it from the message type, as the routes were derived.
 */
export interface RouteAction {
  messageType?: string;
  kind?: ContractKind;
  variants?: Array<{ whenQuery: string; messageType: string; kind?: ContractKind }>;
  dispatch?: 'body' | 'query';
  messageTypes?: string[];
}

export const ROUTE_ACTION_SCHEMA_PROPERTIES = {
  messageType: { type: 'string', description: 'message type of the contract this route serves' },
  variants: {
    type: 'array',
    items: {
      type: 'object',
      properties: { whenQuery: { type: 'string' }, messageType: { type: 'string' } },
      required: ['whenQuery', 'messageType'],
    },
  },
  dispatch: { type: 'string', enum: ['body', 'query'] },
  messageTypes: { type: 'array', items: { type: 'string' } },
} as const;

/**
 * What each step needs to know about its route: which contract(s) it serves, and the kind of each, worked out once
 * here with the route rather than from the message type on every request.
 */
export function routeAction(endpoint: EndpointSpec): RouteAction {
  const action: RouteAction = {};
  if (endpoint.dispatch) {
    action.dispatch = endpoint.dispatch;
    action.kind = endpoint.dispatch === 'body' ? 'command' : 'query';
    action.messageTypes = [...endpoint.messageTypes];
    return action;
  }
  if (endpoint.messageType) {
    action.messageType = endpoint.messageType;
    if (endpoint.kind) action.kind = endpoint.kind;
  }
  if (endpoint.variants.length)
    action.variants = endpoint.variants.map((v) => ({
      whenQuery: v.whenQuery,
      messageType: v.messageType,
      kind: v.kind,
    }));
  return action;
}
