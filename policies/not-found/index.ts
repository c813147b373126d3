import type { NextFunction, Request, Response } from 'express';
import { schema } from './schema';
import { POLICY_NAMES } from '../../plugin/policy-names';
import { traceOf } from '../../plugin/request/trace';
import { sendError } from '../../plugin/http/respond';
import { noHandler, type ContractSource } from '../../plugin/pipeline/resolve-contract';

/**
 * `not-found`: the step of the last generated pipeline, the catch-all under /api. A request that reaches it matched
 * no contract route (unknown path, or a method the path does not serve), so it gets the 404
 * HANDLER_NOT_FOUND error body with the trace headers instead of the host's HTML page (503 while the bus is not up). The answer names neither the path
 * nor the method. OPTIONS is passed on: CORS preflights are answered by whatever comes after (or the host).
 */
/** What the step uses: whether the routes are known yet (the bus is up, the discovery grace is over). */
export function notFoundPolicy(services: ContractSource) {
  return { name: POLICY_NAMES.notFound, schema, policy: () => notFound(services) };
}

function notFound(services: ContractSource) {
  return (req: Request, res: Response, next: NextFunction): void => {
    if (req.method === 'OPTIONS') {
      next();
      return;
    }
    const trace = traceOf(req, res);
    sendError(res, noHandler('No contract handles this method and path', services), trace.correlationId);
  };
}
