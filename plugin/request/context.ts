import type { Request } from 'express';
import type { Context } from '@opentelemetry/api';
import type { ServerSpan } from '../observability/tracing';
import type { GatewayError } from '../errors/gateway-error';
import type { MessageUser } from '../bus/transport';
import type { Contract, ContractKind } from '../contracts/types';
import type { RouteAction } from '../routing/route-action';
import { pipelineRunOf } from '../host/eg-context';

/** What plugin/observability/request-observer.ts keeps of a request. */
export interface Observed {
  /** performance.now() when the server got the request. */
  start: number;
  /** The request's server span (its own or the HTTP instrumentation's) and its context; none while no SDK is registered. */
  span: ServerSpan | undefined;
  /** Without a span: the trace context and baggage the caller sent, read once for the bus and the access log. */
  caller?: Context;
}

/** The request's trace ids (plugin/request/trace.ts makes them). */
export interface Trace {
  correlationId: string;
  requestId: string;
}

/** What the route-table step found for a request: the route (as an endpoint's `contract:` would say) and its path parameters. */
export interface TableMatch {
  action: RouteAction;
  params: Record<string, string>;
}

export interface ResolvedContract {
  contract: Contract;
  /** A generic route: the input is body.input (POST /api/actions) or the query minus messageType (GET /api/data). */
  dispatched: boolean;
  /** The route's kind (command, query, create, …), as the route action carries it; undefined: derive it from the message type. */
  kind?: ContractKind;
}

/**
 * The one access decision of a pipeline run: the rule under which the caller was let on. Made by the first step that
 * checks access (the permission step; contract-router when no permission step ran before it) and read by the later
 * ones, so contract-router's own check (the contract holds wherever it is served) is not made twice.
 */
interface AccessDecision {
  readonly public: boolean;
  readonly required: readonly string[];
}

/**
 * What one pipeline run works out about the request (Express Gateway runs one pipeline per apiEndpoint the request
 * reaches; a hand-written pipeline whose steps all call next() passes the request on to the next one, which starts a
 * new run with a route of its own).
 */
export interface PipelineRun {
  /** The host's token for this run (plugin/host/eg-context.ts); compared only where the run is entered (runOf). */
  readonly host: object | undefined;
  /** The route of the endpoint this run serves: undefined until worked out, null when it serves no contract. */
  route?: RouteAction | null;
  /** The request's contract, resolved once (plugin/pipeline/resolve-contract.ts). */
  resolved?: ResolvedContract;
  /** The message's input, built once (plugin/pipeline/message-input.ts): schema-validation fills defaults, the router sends it. */
  input?: Record<string, unknown>;
  /** Set by the step that let the caller on (plugin/auth/access-check.ts); undefined: no step decided yet. */
  access?: AccessDecision;
}

/**
 * Everything our steps work out about one request, declared here in one type: built once, at the first of our steps
 * that sees the request (the runner, plugin/lifecycle/runner.ts, or the server's observer), and read by every later
 * step. Who fills what:
 * - trace: trace.ts (the runner, before the first step);
 * - body, bodyError, rawBody: body.ts and replay-body.ts (the runner reads the body before a step that needs it);
 * - caller: jwt-dev-auth;
 * - tableMatch: the route-table step (plugin/routing/table-match.ts);
 * - observed, routeTemplate: plugin/observability/;
 * - run: the current pipeline run's route, contract, input and access decision (PipelineRun).
 */
export interface RequestContext {
  trace?: Trace;
  /** The JSON body, once read (the request stream can be read only once). */
  body?: Record<string, unknown>;
  /** Why the body could not be read (413, 415, 400): kept, and thrown to every step that asks for the body. */
  bodyError?: GatewayError;
  /** The bytes express.json parsed, for a proxy step after ours. */
  rawBody?: Buffer;
  /** The authenticated caller; undefined on public or unauthenticated routes. */
  caller?: MessageUser;
  tableMatch?: TableMatch;
  /** When the server got the request and its server span (none while no SDK is registered). */
  observed?: Observed;
  /** Set by a handler Express has no route path for (files served by a mounted router): its label. */
  routeTemplate?: string;
  run: PipelineRun;
}

/**
 * Beside the request, not on it: Express gives every request object a new prototype, so adding a property to one
 * builds a new hidden class, far dearer than a WeakMap entry (bench/REPORT.md), and reads miss V8's inline caches.
 */
const contexts = new WeakMap<Request, RequestContext>();

/** The request's context, made on first use (one per request). */
export function requestContext(req: Request): RequestContext {
  let ctx = contexts.get(req);
  if (ctx === undefined) contexts.set(req, (ctx = { run: { host: pipelineRunOf(req) } }));
  return ctx;
}

/**
 * The request's context with the run of the pipeline it is in now: a request the host passed on to another endpoint
 * starts a new run there, so nothing one pipeline worked out about its route, contract or access counts in another.
 */
export function runContext(req: Request): RequestContext {
  const ctx = requestContext(req);
  const host = pipelineRunOf(req);
  if (ctx.run.host !== host) ctx.run = { host };
  return ctx;
}
