import type { Request, Response, NextFunction } from 'express';
import { schema } from './schema';
import { POLICY_NAMES } from '../../plugin/policy-names';
import { traceOf } from '../../plugin/request/trace';

/**
 * `request-trace`: the first step of every generated pipeline. It sets X-Correlation-Id and X-Request-Id on the
 * response before anything can answer, so the preflight that the host's cors step ends, and every error, carry them.
 * Nothing is logged here: this is the hot path.
 */
function requestTrace() {
  return (req: Request, res: Response, next: NextFunction): void => {
    traceOf(req, res);
    next();
  };
}

/** Needs none of the request services; a factory like the others so that createPolicies treats them alike. */
export function requestTracePolicy() {
  return { name: POLICY_NAMES.requestTrace, schema, policy: requestTrace };
}
