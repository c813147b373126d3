import type { Request } from 'express';
import { bodyOf } from '../request/body';
import type { Contract } from '../contracts/types';
import { GatewayError, serviceUnavailable } from '../errors/gateway-error';
import type { RouteAction } from '../routing/route-action';
import type { PipelineRun, RequestContext, ResolvedContract } from '../request/context';
import { endpointRouteOf } from '../host/eg-context';

// The types policies take their action as and get back, next to contractOf() which reads the one and gives the other.
export type { ResolvedContract, RouteAction };

/**
 * What resolving a contract needs of the runtime: the contracts known now, the bus's state, whether the services
 * have had time to announce since it came up.
 */
export interface ContractSource {
  /** excludeFromGeneratedRoutes: message types a generated route must not reach (a stale file may still name them). */
  readonly settings: { readonly excludeFromGeneratedRoutes?: readonly string[] };
  readonly transport: { state(): string; announcementsUnheard?(): string | undefined };
  readonly discoveryGrace: { remainingMs(): number };
  contract(messageType: string): Contract | undefined;
}

/** True when a step's action names the contract(s) of its route itself (hand-written pipelines may). */
export function namesContract(action: RouteAction): boolean {
  return action.messageType !== undefined || action.dispatch !== undefined || (action.variants?.length ?? 0) > 0;
}

/**
 * The route a request is for: the step's own action when it names a contract; else, with `routing: table`, what the
 * route-table step found; else the `contract:` the generated apiEndpoint entry carries (every generated route runs
 * one shared pipeline whose steps carry no route). Undefined for a hand-written route that serves no contract.
 * The route of the run is worked out once per pipeline run and kept in the context.
 */
export function routeOf(ctx: RequestContext, req: Request, action: RouteAction): RouteAction | undefined {
  if (namesContract(action)) return action;
  const run = ctx.run;
  if (run.route === undefined) run.route = ctx.tableMatch?.action ?? endpointRoute(req);
  return run.route ?? undefined;
}

/** Per pipeline run, not per request: a request that a hand-written pipeline passes on reaches another endpoint. */
function endpointRoute(req: Request): RouteAction | null {
  const onEndpoint = endpointRouteOf(req);
  return onEndpoint && typeof onEndpoint === 'object' && namesContract(onEndpoint) ? onEndpoint : null;
}

/**
 * No contract for this request: 404 HANDLER_NOT_FOUND, unless the bus is not up, the gateway cannot hear the
 * services' announcements (the broker refuses its listener), or the bus came up moments ago (the discovery grace).
 * Then the routes are only not known yet, and a client must not take that answer as final: 503, retry later.
 */
export function noHandler(message: string, source: ContractSource): GatewayError {
  if (source.transport.state() !== 'up')
    return serviceUnavailable('The message bus is not connected: the routes are not known yet');
  if (source.transport.announcementsUnheard?.() !== undefined)
    return serviceUnavailable("The gateway cannot hear the services' announcements yet: the routes are not known yet");
  const graceMs = source.discoveryGrace.remainingMs();
  if (graceMs > 0)
    return serviceUnavailable(
      'The gateway has just connected to the message bus: the routes are not all known yet',
      Math.ceil(graceMs / 1000),
    );
  return new GatewayError('HANDLER_NOT_FOUND', message);
}

/**
 * Which contract this request is for; worked out once per pipeline run and shared by every step of it. A route
 * that dispatches on the body finds it there, read by the runner before the step (the step declares `needs`,
 * plugin/lifecycle/runner.ts). Throws when none serves: a contract withdrawn after the route was written answers
 * 404 HANDLER_NOT_FOUND until the route goes, and a body that could not be read is answered here by its own error.
 */
export function contractOf(
  ctx: RequestContext,
  req: Request,
  action: RouteAction,
  source: ContractSource,
): ResolvedContract {
  const known = ctx.run.resolved;
  if (known) return known;
  const route = routeOf(ctx, req, action);
  if (!route) throw noHandler('No handler for this route', source);
  // Only a route that dispatches on the body (POST /api/actions) names its contract there; the others know it unread.
  return remember(ctx.run, req, source, route, action, route.dispatch === 'body' ? bodyOf(ctx, req) : undefined);
}

/** `route` is the step's own `action` in a hand-written pipeline, else the generated route's (routeOf). */
function remember(
  run: PipelineRun,
  req: Request,
  source: ContractSource,
  route: RouteAction,
  action: RouteAction,
  body: Record<string, unknown> | undefined,
): ResolvedContract {
  const picked = pickMessageType(req, route, source, body);
  const messageType = picked.messageType;
  const contract = source.contract(messageType);
  if (!contract) throw noHandler(`No handler for ${messageType}`, source);
  // Taken off the generated routes: only a hand-written step naming it reaches it, whatever an older file still says.
  if (route !== action && source.settings.excludeFromGeneratedRoutes?.includes(messageType))
    throw new GatewayError('HANDLER_NOT_FOUND', `No handler for ${messageType}`);
  const resolved: ResolvedContract = { contract, dispatched: route.dispatch !== undefined };
  // Only a generated route carries its kind; a hand-written step's action has none (its schema names no `kind`).
  if (route !== action && picked.kind !== undefined) resolved.kind = picked.kind;
  run.resolved = resolved;
  return resolved;
}

/** The message type the route serves for this request, and its kind when the route carries it. */
function pickMessageType(
  req: Request,
  action: RouteAction,
  source: ContractSource,
  body?: Record<string, unknown>,
): { messageType: string; kind?: RouteAction['kind'] } {
  if (action.dispatch) {
    const named = action.dispatch === 'body' ? body?.messageType : req.query.messageType;
    if (typeof named !== 'string' || named === '') {
      throw new GatewayError('MISSING_REQUIRED_FIELD', 'messageType is required on this route', {
        details: { messageType: 'is required' },
      });
    }
    if (!action.messageTypes?.includes(named)) throw noHandler(`No handler for ${named}`, source);
    return { messageType: named, kind: action.kind };
  }
  for (const v of action.variants ?? []) {
    if (req.query[v.whenQuery] !== undefined) return v;
  }
  if (!action.messageType) throw new GatewayError('HANDLER_NOT_FOUND', 'No handler for this route');
  return { messageType: action.messageType, kind: action.kind };
}
