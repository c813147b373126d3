import type { NextFunction, Request, Response } from 'express';
import { traceOf } from '../request/trace';
import { readBody, type BodyNeed } from '../request/body';
import type { StepFailure } from '../pipeline/step-error';

/**
 * One step of a pipeline: what a policy runs for each request (each of the plugin's policies is `runner([step])`).
 * `run` is an ordinary function: it is done when it returns, and it returns a promise only when it has something to
 * wait for, which is a token to verify, the rate-limit store or the bus reply. A step that answered the request (the
 * response's headers are sent) ends the run.
 */
export interface Step {
  run(req: Request, res: Response): void | Promise<void>;
  /** The answer to what `run` throws or its promise rejects with. */
  failed: StepFailure;
  /** Set on a step that needs the request's JSON body (for its contract or its input): read before it runs. */
  body?: BodyNeed;
}

export type Middleware = (req: Request, res: Response, next: NextFunction) => void;

/**
 * The middleware that runs `steps` in order, then calls next() unless one of them answered. The lifecycle of a
 * request is here, in one place:
 * 1. before a step that needs the body (its `body` wants it), the body is read once (readBody, plugin/request/body.ts);
 *    a body that cannot be read is kept as an error, which the steps that ask for it (contractOf, inputOf) throw, so
 *    it is answered in their order (401 for an anonymous caller comes first);
 * 2. the step runs: the contract, its input and the access rule are plain functions of the request then
 *    (plugin/pipeline/resolve-contract.ts, message-input.ts, plugin/auth/route-access.ts);
 * 3. the next step follows at once after a step that returned nothing; a promise (a token to verify, the rate-limit
 *    store, the bus) is waited for. Most requests have all they need at hand (no body, the token verified before)
 *    and cost no promise, microtask or closure.
 */
export function runner(steps: readonly Step[]): Middleware {
  return (req, res, next) => {
    traceOf(req, res);
    runFrom(steps, 0, req, res, next);
  };
}

/**
 * An error answer that itself failed on the promise path: nothing sensible can be written any more, and a rejection
 * left unhandled would end the process, so the connection is cut (the client sees it fail, nobody else does).
 */
function cutOff(res: Response): void {
  res.destroy();
}

function runFrom(steps: readonly Step[], first: number, req: Request, res: Response, next: NextFunction): void {
  for (let i = first; i < steps.length; i++) {
    const step = steps[i];
    const body = step.body;
    if (body?.wanted(req)) {
      const reading = readBody(req, res, body.limits);
      // readBody never rejects: what went wrong is kept for the step that asks for the body.
      if (reading !== undefined) {
        reading.then(() => (res.headersSent ? undefined : runFrom(steps, i, req, res, next))).catch(() => cutOff(res));
        return;
      }
    }
    let pending: void | Promise<void>;
    try {
      pending = step.run(req, res);
    } catch (err) {
      step.failed(err, req, res);
      return;
    }
    if (pending !== undefined) {
      pending
        .then(
          () => (res.headersSent ? undefined : runFrom(steps, i + 1, req, res, next)),
          (err: unknown) => step.failed(err, req, res),
        )
        .catch(() => cutOff(res));
      return;
    }
    if (res.headersSent) return;
  }
  next();
}
