import type { Request, Response } from 'express';
import { bodyAtHand, readBody } from '../request/body';
import type { Contract } from '../contracts/types';
import { GatewayError, serviceUnavailable } from '../errors';
import { currentRuntime, startedRuntime, type Runtime } from '../runtime';
import { tableMatchOf } from '../routing/table-routes';
import { requestState, type RequestState } from '../request/state';
import type { Maybe } from './maybe';

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

export interface ResolvedContract {
  contract: Contract;
  /** A generic route: the input is body.input (POST /api/actions) or the query minus messageType (GET /api/data). */
  dispatched: boolean;
}

declare module '../request/state' {
  interface RequestState {
    resolved?: ResolvedContract;
  }
}

/** True when a step's action names the contract(s) of its route itself (hand-written pipelines may). */
export function namesContract(action: RouteAction): boolean {
  return action.messageType !== undefined || action.dispatch !== undefined || (action.variants?.length ?? 0) > 0;
}

type EndpointRequest = Request & { egContext?: { apiEndpoint?: { contract?: RouteAction } } };

/**
 * The route a request is for: the step's own action when it names a contract; else, with `routing: table`, what the
 * route-table step found; else the `contract:` the generated apiEndpoint entry carries (every generated route runs
 * one shared pipeline whose steps carry no route). Undefined for a hand-written route that serves no contract.
 */
export function routeOf(req: Request, action: RouteAction): RouteAction | undefined {
  if (namesContract(action)) return action;
  const matched = tableMatchOf(req);
  if (matched) return matched.action;
  // Read each time, not kept per request: a request that a hand-written pipeline passes on (all its steps call
  // next()) reaches the next matching endpoint with a new egContext.
  const onEndpoint = (req as EndpointRequest).egContext?.apiEndpoint?.contract;
  return onEndpoint && typeof onEndpoint === 'object' && namesContract(onEndpoint) ? onEndpoint : undefined;
}

/**
 * No contract for this request: 404 HANDLER_NOT_FOUND, unless the bus is not up. Then the routes are only not known
 * yet (the broker is down or still connecting), and a client must not take that answer as final: 503, retry later.
 */
export function noHandler(message: string): GatewayError {
  const runtime = currentRuntime();
  if (runtime && runtime.transport.state() !== 'up') return serviceUnavailable('The message bus is not connected: the routes are not known yet');
  return new GatewayError('HANDLER_NOT_FOUND', message);
}

/**
 * Which contract this request is for; computed once per request and shared by every policy of the pipeline.
 * At once unless the body has to be read to know it (POST /api/actions), see contractAtHand.
 * A contract that was withdrawn after the route was written answers 404 HANDLER_NOT_FOUND until the route goes.
 */
export function resolveContract(req: Request, res: Response, action: RouteAction): Maybe<ResolvedContract> {
  return contractAtHand(req, action) ?? contractOnceRead(req, res, action);
}

/**
 * The contract when knowing it needs no waiting: resolved by an earlier step, named by the route, or named by a body
 * read already. Undefined when it is named by a body still to be read (contractOnceRead). Throws when none serves.
 */
export function contractAtHand(req: Request, action: RouteAction): ResolvedContract | undefined {
  const state = requestState(req);
  const known = state.resolved;
  if (known) return known;
  const runtime = startedRuntime();
  const route = routeWithHandler(req, action);
  // Only a route that dispatches on the body (POST /api/actions) names its contract there; the others know it unread.
  if (route.dispatch !== 'body') return remember(state, req, runtime, route, undefined);
  const body = bodyAtHand(req);
  return body && remember(state, req, runtime, route, body);
}

/** The contract of a route that dispatches on the body, once the body is read. */
export async function contractOnceRead(req: Request, res: Response, action: RouteAction): Promise<ResolvedContract> {
  const atHand = contractAtHand(req, action);
  if (atHand) return atHand;
  const runtime = startedRuntime();
  const body = await readBody(req, res, runtime.settings);
  return remember(requestState(req), req, runtime, routeWithHandler(req, action), body);
}

function routeWithHandler(req: Request, action: RouteAction): RouteAction {
  const route = routeOf(req, action);
  if (!route) throw noHandler('No handler for this route');
  return route;
}

function remember(state: RequestState, req: Request, runtime: Runtime, route: RouteAction, body: Record<string, unknown> | undefined): ResolvedContract {
  const messageType = pickMessageType(req, route, body);
  const contract = runtime.contract(messageType);
  if (!contract) throw noHandler(`No handler for ${messageType}`);
  const resolved = { contract, dispatched: route.dispatch !== undefined };
  state.resolved = resolved;
  return resolved;
}

function pickMessageType(req: Request, action: RouteAction, body?: Record<string, unknown>): string {
  if (action.dispatch) {
    const named = action.dispatch === 'body' ? body?.messageType : req.query.messageType;
    if (typeof named !== 'string' || named === '') {
      throw new GatewayError('MISSING_REQUIRED_FIELD', 'messageType is required on this route', {
        details: { messageType: 'is required' },
      });
    }
    if (!action.messageTypes?.includes(named)) throw new GatewayError('HANDLER_NOT_FOUND', `No handler for ${named}`);
    return named;
  }
  for (const v of action.variants ?? []) {
    if (req.query[v.whenQuery] !== undefined) return v.messageType;
  }
  if (!action.messageType) throw new GatewayError('HANDLER_NOT_FOUND', 'No handler for this route');
  return action.messageType;
}
