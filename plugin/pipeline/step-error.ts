import type { Request, Response } from 'express';
import { traceOf } from '../request/trace';
import { currentRuntime } from '../runtime';
import { sendError } from '../http/respond';
import { GatewayError } from '../errors';

/**
 * The failure branch the policy steps share (settle's `fail`): the error answered in the error body with the
 * request's correlation id. One that is not a GatewayError is a bug rather than an answer, so it is logged too, in
 * the words `logged` gives it (never sent to the client). Made once per policy, at module level.
 */
export function answerStepError(logged: (err: unknown) => string): (err: unknown, req: Request, res: Response) => void {
  return (err, req, res) => {
    const { correlationId } = traceOf(req, res);
    if (!(err instanceof GatewayError)) currentRuntime()?.log.error(`[${correlationId}] ${logged(err)}`);
    sendError(res, err, correlationId);
  };
}
