import type { Request, Response, NextFunction } from 'express';
import { schema } from './schema';
import { POLICY_NAMES } from '../../plugin/policy-names';
import type { RequestServices } from '../../plugin/parts/request-services';
import { setTableMatch } from '../../plugin/routing/table-match';
import { ParamDecodeError } from '../../plugin/routing/path-table';
import { traceOf } from '../../plugin/request/trace';
import { sendError } from '../../plugin/http/respond';
import { GatewayError } from '../../plugin/errors/gateway-error';

/**
 * `route-table`: the first step of the one generated endpoint of `routing: table`. It finds the request's route in
 * the plugin's path table (plugin/routing/path-table.ts) and records it for the steps after it, which read it
 * through routeOf() as they read an endpoint's `contract:` in `routing: endpoints`. A path or method no contract
 * serves leaves this endpoint untouched (`next('router')`): the host goes on to the entries after it, hand-written
 * ones and the JSON 404 last, exactly as when no generated endpoint matched.
 */
/** What the step uses: the path table of the contracts known now. */
type Uses = Pick<RequestServices, 'pathTable'>;

export function routeTablePolicy(services: Uses) {
  return { name: POLICY_NAMES.routeTable, schema, policy: () => routeTable(services) };
}

function routeTable(services: Uses) {
  return (req: Request, res: Response, next: NextFunction): void => {
    let match: ReturnType<ReturnType<Uses['pathTable']>['match']>;
    try {
      match = services.pathTable().match(req.method, req.path);
    } catch (err) {
      if (!(err instanceof ParamDecodeError)) throw err;
      // Express answers an undecodable parameter with 400 too (plugin/http/final-handler.ts).
      sendError(res, new GatewayError('BAD_REQUEST', 'The request is malformed'), traceOf(req, res).correlationId);
      return;
    }
    if (!match) return next('router');
    setTableMatch(req, { action: match.value, params: match.params });
    next();
  };
}
