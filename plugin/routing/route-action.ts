import type { EndpointSpec } from '../contracts/endpoint-specs';

/**
 * The action every generated pipeline step carries: which contract(s) the route serves.
 * - messageType: the route's contract;
 * - variants: another contract for the same route when a query parameter is present (GET /api/users?userId=);
 * - dispatch: a generic route (/api/actions, /api/data) where the caller names the message type, limited to `messageTypes`.
 */
export interface RouteAction {
  messageType?: string;
  variants?: Array<{ whenQuery: string; messageType: string }>;
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

/** What each step needs to know about its route: which contract(s) it serves. */
export function routeAction(endpoint: EndpointSpec): RouteAction {
  const action: RouteAction = {};
  if (endpoint.dispatch) {
    action.dispatch = endpoint.dispatch;
    action.messageTypes = [...endpoint.messageTypes];
    return action;
  }
  if (endpoint.messageType) action.messageType = endpoint.messageType;
  if (endpoint.variants.length)
    action.variants = endpoint.variants.map((v) => ({ whenQuery: v.whenQuery, messageType: v.messageType }));
  return action;
}
