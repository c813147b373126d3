import type { NextFunction, Request, Response } from 'express';
import { schema } from './schema';
import { POLICY_NAMES } from '../../plugin/policy-names';
import { traceOf } from '../../plugin/request/trace';
import { sendError } from '../../plugin/http/respond';
import { noHandler } from '../../plugin/pipeline/resolve-contract';
import type { Runtime } from '../../plugin/runtime';

/**
 * `not-found`: the step of the last generated pipeline, the catch-all under /api. A request that reaches it matched
 * no contract route (unknown path, or a method the path does not serve), so it gets the 404
 * HANDLER_NOT_FOUND error body with the trace headers instead of the host's HTML page (503 while the bus is not up). The answer names neither the path
 * nor the method. OPTIONS is passed on: CORS preflights are answered by whatever comes after (or the host).
 */
export function notFoundPolicy(runtime: Runtime) {
  return { name: POLICY_NAMES.notFound, schema, policy: () => notFound(runtime) };
}

function notFound(runtime: Runtime) {
  return (req: Request, res: Response, next: NextFunction): void => {
    if (req.method === 'OPTIONS') {
      next();
      return;
    }
    const trace = traceOf(req, res);
    sendError(res, noHandler('No contract handles this method and path', runtime), trace.correlationId);
  };
}
