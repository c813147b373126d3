import type { Request } from 'express';
import { bodyOf, bodyToRead, type BodyLimits, type BodyNeed } from '../request/body';
import type { Contract } from '../contracts/types';
import { GatewayError, serviceUnavailable } from '../errors/gateway-error';
import { tableMatchOf } from '../routing/table-match';
import type { RouteAction } from '../routing/route-action';
import { requestState, type RequestState } from '../request/state';

// The type policies take their action as, next to contractOf() which reads it.
export type { RouteAction };

/**
 * What resolving a contract needs of the runtime: the contracts known now, the bus's state, whether the services
 * have had time to announce since it came up.
 */
export interface ContractSource {
  /** excludeFromGeneratedRoutes: message types a generated route must not reach (a stale file may still name them). */
  readonly settings: { readonly excludeFromGeneratedRoutes?: readonly string[] };
  readonly transport: { state(): string };
  readonly discoveryGrace: { remainingMs(): number };
  contract(messageType: string): Contract | undefined;
}

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
 * No contract for this request: 404 HANDLER_NOT_FOUND, unless the bus is not up or came up moments ago (the
 * discovery grace). Then the routes are only not known yet (the broker is down or still connecting, or the services
 * have not all announced), and a client must not take that answer as final: 503, retry later.
 */
export function noHandler(message: string, source: ContractSource): GatewayError {
  if (source.transport.state() !== 'up')
    return serviceUnavailable('The message bus is not connected: the routes are not known yet');
  const graceMs = source.discoveryGrace.remainingMs();
  if (graceMs > 0)
    return serviceUnavailable(
      'The gateway has just connected to the message bus: the routes are not all known yet',
      Math.ceil(graceMs / 1000),
    );
  return new GatewayError('HANDLER_NOT_FOUND', message);
}

/**
 * True when the request's contract is named in a body still to be read (POST /api/actions): a step that needs the
 * contract declares this, and the runner reads the body before it (plugin/lifecycle/runner.ts).
 */
function contractNeedsBody(req: Request, action: RouteAction): boolean {
  return bodyToRead(req) && routeOf(req, action)?.dispatch === 'body';
}

/** What a step that needs the contract (and not the input) declares: the body of a route that dispatches on it. */
export function contractNeed(action: RouteAction, limits: BodyLimits): BodyNeed {
  return { wanted: (req) => contractNeedsBody(req, action), limits };
}

/**
 * Which contract this request is for; worked out once per request and shared by every step of the pipeline. A route
 * that dispatches on the body finds it there, read by the runner before the step (contractNeedsBody). Throws when
 * none serves: a contract withdrawn after the route was written answers 404 HANDLER_NOT_FOUND until the route goes,
 * and a body that could not be read is answered here by its own error.
 */
export function contractOf(req: Request, action: RouteAction, source: ContractSource): ResolvedContract {
  const state = requestState(req);
  const known = state.resolved;
  if (known) return known;
  const route = routeWithHandler(req, action, source);
  // Only a route that dispatches on the body (POST /api/actions) names its contract there; the others know it unread.
  return remember(state, req, source, route, action, route.dispatch === 'body' ? bodyOf(req) : undefined);
}

function routeWithHandler(req: Request, action: RouteAction, source: ContractSource): RouteAction {
  const route = routeOf(req, action);
  if (!route) throw noHandler('No handler for this route', source);
  return route;
}

/** `route` is the step's own `action` in a hand-written pipeline, else the generated route's (routeOf). */
function remember(
  state: RequestState,
  req: Request,
  source: ContractSource,
  route: RouteAction,
  action: RouteAction,
  body: Record<string, unknown> | undefined,
): ResolvedContract {
  const messageType = pickMessageType(req, route, source, body);
  const contract = source.contract(messageType);
  if (!contract) throw noHandler(`No handler for ${messageType}`, source);
  // Taken off the generated routes: only a hand-written step naming it reaches it, whatever an older file still says.
  if (route !== action && source.settings.excludeFromGeneratedRoutes?.includes(messageType))
    throw new GatewayError('HANDLER_NOT_FOUND', `No handler for ${messageType}`);
  const resolved = { contract, dispatched: route.dispatch !== undefined };
  state.resolved = resolved;
  return resolved;
}

function pickMessageType(
  req: Request,
  action: RouteAction,
  source: ContractSource,
  body?: Record<string, unknown>,
): string {
  if (action.dispatch) {
    const named = action.dispatch === 'body' ? body?.messageType : req.query.messageType;
    if (typeof named !== 'string' || named === '') {
      throw new GatewayError('MISSING_REQUIRED_FIELD', 'messageType is required on this route', {
        details: { messageType: 'is required' },
      });
    }
    if (!action.messageTypes?.includes(named)) throw noHandler(`No handler for ${named}`, source);
    return named;
  }
  for (const v of action.variants ?? []) {
    if (req.query[v.whenQuery] !== undefined) return v.messageType;
  }
  if (!action.messageType) throw new GatewayError('HANDLER_NOT_FOUND', 'No handler for this route');
  return action.messageType;
}
