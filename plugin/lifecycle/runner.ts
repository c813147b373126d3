import type { NextFunction, Request, Response } from 'express';
import { traceOf } from '../request/trace';
import type { StepFailure } from '../pipeline/step-error';

/**
 * One step of a request's lifecycle. `run` is an ordinary function: it is done when it returns, and it returns a
 * promise only when it has something to wait for (a body to read, a token to verify, the bus reply). A stage that
 * answered the request (the response's headers are sent) ends the run.
 */
export interface Stage {
  run(req: Request, res: Response): void | Promise<void>;
  /** The answer to what `run` throws or its promise rejects with. */
  failed: StepFailure;
}

export type Middleware = (req: Request, res: Response, next: NextFunction) => void;

/**
 * The middleware that runs `stages` in order, then calls next() unless one of them answered. It goes on at once after
 * a stage that returned nothing and waits only for a promise: most requests have all they need at hand (contract
 * resolved, token verified before, no body) and then cost no promise, microtask or closure. A stage reads top to
 * bottom and returns a promise only from its waiting way (the `…OnceRead` helpers).
 */
export function runner(stages: readonly Stage[]): Middleware {
  return (req, res, next) => {
    traceOf(req, res);
    runFrom(stages, 0, req, res, next);
  };
}

/**
 * An error answer that itself failed on the promise path: nothing sensible can be written any more, and a rejection
 * left unhandled would end the process, so the connection is cut (the client sees it fail, nobody else does).
 */
function cutOff(res: Response): void {
  res.destroy();
}

function runFrom(stages: readonly Stage[], first: number, req: Request, res: Response, next: NextFunction): void {
  for (let i = first; i < stages.length; i++) {
    const stage = stages[i];
    let pending: void | Promise<void>;
    try {
      pending = stage.run(req, res);
    } catch (err) {
      stage.failed(err, req, res);
      return;
    }
    if (pending !== undefined) {
      pending
        .then(
          () => (res.headersSent ? undefined : runFrom(stages, i + 1, req, res, next)),
          (err: unknown) => stage.failed(err, req, res),
        )
        .catch(() => cutOff(res));
      return;
    }
    if (res.headersSent) return;
  }
  next();
}
