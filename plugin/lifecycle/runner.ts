import type { NextFunction, Request, Response } from 'express';
import { traceIn } from '../request/trace';
import { bodyToRead, readBody, type BodyLimits } from '../request/body';
import { runContext, type RequestContext } from '../request/context';
import { routeOf, type RouteAction } from '../pipeline/resolve-contract';
import type { StepFailure } from '../pipeline/step-error';

/**
 * What a step needs of the request before it runs, said as data: the runner provides it, so no step is run to find
 * out whether the body must be read.
 * - `contract`: the body when the route dispatches on it (POST /api/actions names its contract there);
 * - `input`: that, and the body of every request the step admits (its message input is built from the body).
 */
interface StepNeeds {
  readonly body: 'contract' | 'input';
  /** The step's action: the route it serves (a hand-written step may name its contract; a generated one does not). */
  readonly route: RouteAction;
  readonly limits: BodyLimits;
}

/**
 * One step of a pipeline: what a policy runs for each request (each of the plugin's policies is `runner([step])`).
 * `run` is an ordinary function: it is done when it returns, and it returns a promise only when it has something to
 * wait for, which is a token to verify, the rate-limit store or the bus reply. A step that answered the request (the
 * response's headers are sent) ends the run.
 */
export interface Step<A = undefined> {
  /** What the runner provides before the step runs (the body); none: the step reads nothing the runner must fetch. */
  readonly needs?: StepNeeds;
  /**
   * The part of a step that decides, before the body is read, whether the request gets as far as its input (its
   * contract resolves, its caller may use it); throws the answer. What it returns is handed to `run`. A step without
   * one admits every request (A is then undefined).
   */
  admit?(req: Request, ctx: RequestContext): A;
  run(req: Request, res: Response, ctx: RequestContext, admitted: A): void | Promise<void>;
  /** The answer to what `admit` or `run` throws or `run`'s promise rejects with. */
  failed: StepFailure;
}

export type Middleware = (req: Request, res: Response, next: NextFunction) => void;

/**
 * The middleware that runs `steps` in order, then calls next() unless one of them answered. The lifecycle of a
 * request is here, in one place:
 * 1. the request's context is entered (plugin/request/context.ts): made at the first of our steps, with the trace ids
 *    set on the response; a new pipeline run (the host passed the request on) starts a new run in it;
 * 2. what the step needs is provided (its `needs`): the body of a route that dispatches on it is read before the
 *    step; the step's `admit` decides; then the body of a request it admitted is read, if the step needs the input.
 *    The body is read once (readBody, plugin/request/body.ts); a body that cannot be read is kept as an error, which
 *    the steps that ask for it (contractOf, inputOf) throw, so it is answered in their order (401 for an anonymous
 *    caller comes first);
 * 3. the step runs: the contract, its input and the access decision are kept in the context
 *    (plugin/pipeline/resolve-contract.ts, message-input.ts, plugin/auth/access-check.ts);
 * 4. the next step follows at once after a step that returned nothing; a promise (a token to verify, the rate-limit
 *    store, the bus) is waited for. Most requests have all they need at hand (no body, the token verified before)
 *    and cost no promise, microtask or closure.
 */
export function runner<A>(steps: readonly Step<A>[]): Middleware {
  return (req, res, next) => {
    const ctx = runContext(req);
    traceIn(ctx, req, res);
    runFrom(steps, 0, ctx, req, res, next);
  };
}

/**
 * An error answer that itself failed on the promise path: nothing sensible can be written any more, and a rejection
 * left unhandled would end the process, so the connection is cut (the client sees it fail, nobody else does).
 */
function cutOff(res: Response): void {
  res.destroy();
}

function runFrom<A>(
  steps: readonly Step<A>[],
  first: number,
  ctx: RequestContext,
  req: Request,
  res: Response,
  next: NextFunction,
): void {
  for (let i = first; i < steps.length; i++) {
    if (!stepGoesOnNow(steps, i, ctx, req, res, next)) return;
  }
  next();
}

/**
 * Step i: what it needs provided, admitted, run. True when the next step follows at once; false when the run goes on
 * later (a body to read, a promise) or has ended (the step answered or failed).
 */
function stepGoesOnNow<A>(
  steps: readonly Step<A>[],
  i: number,
  ctx: RequestContext,
  req: Request,
  res: Response,
  next: NextFunction,
): boolean {
  const step = steps[i]!;
  const needs = step.needs;
  if (needs !== undefined && bodyToRead(ctx, req) && routeOf(ctx, req, needs.route)?.dispatch === 'body') {
    // The contract is named in the body: read before the step decides anything; then the step starts again.
    const reading = readBody(ctx, req, res, needs.limits);
    if (reading !== undefined) {
      // readBody never rejects: what went wrong is kept for the step that asks for the body.
      reading
        .then(() => (res.headersSent ? undefined : runFrom(steps, i, ctx, req, res, next)))
        .catch(() => cutOff(res));
      return false;
    }
  }
  let admitted: A;
  try {
    admitted = step.admit === undefined ? (undefined as A) : step.admit(req, ctx);
  } catch (err) {
    step.failed(err, req, res);
    return false;
  }
  if (needs?.body === 'input' && bodyToRead(ctx, req)) {
    // Admitted: its input is built from the body.
    const reading = readBody(ctx, req, res, needs.limits);
    if (reading !== undefined) {
      reading
        .then(() => {
          if (!res.headersSent && runAdmitted(steps, i, admitted, ctx, req, res, next))
            runFrom(steps, i + 1, ctx, req, res, next);
        })
        .catch(() => cutOff(res));
      return false;
    }
  }
  return runAdmitted(steps, i, admitted, ctx, req, res, next);
}

/** Runs step i, admitted; true when the next step follows at once (after a promise, the run goes on from there). */
function runAdmitted<A>(
  steps: readonly Step<A>[],
  i: number,
  admitted: A,
  ctx: RequestContext,
  req: Request,
  res: Response,
  next: NextFunction,
): boolean {
  const step = steps[i]!;
  let pending: void | Promise<void>;
  try {
    pending = step.run(req, res, ctx, admitted);
  } catch (err) {
    step.failed(err, req, res);
    return false;
  }
  if (pending !== undefined) {
    pending
      .then(
        () => (res.headersSent ? undefined : runFrom(steps, i + 1, ctx, req, res, next)),
        (err: unknown) => step.failed(err, req, res),
      )
      .catch(() => cutOff(res));
    return false;
  }
  return !res.headersSent;
}
