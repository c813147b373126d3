import type { NextFunction, Request, Response } from 'express';
import { traceOf } from '../request/trace';
import type { StepFailure } from '../pipeline/step-error';

/**
 * One step of a pipeline: what a policy runs for each request (each of the plugin's policies is `runner([step])`).
 * `run` is an ordinary function: it is done when it returns, and it returns a promise only when it has something to
 * wait for (a body to read, a token to verify, the bus reply). A step that answered the request (the response's
 * headers are sent) ends the run.
 */
export interface Step {
  run(req: Request, res: Response): void | Promise<void>;
  /** The answer to what `run` throws or its promise rejects with. */
  failed: StepFailure;
}

export type Middleware = (req: Request, res: Response, next: NextFunction) => void;

/**
 * The middleware that runs `steps` in order, then calls next() unless one of them answered. It goes on at once after
 * a step that returned nothing and waits only for a promise: most requests have all they need at hand (contract
 * resolved, token verified before, no body) and then cost no promise, microtask or closure. A step reads top to
 * bottom and returns a promise only from its waiting way (the `…OnceRead` helpers).
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
