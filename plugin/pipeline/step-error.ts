import type { Request, Response } from 'express';
import { traceOf } from '../request/trace';
import type { Logger } from '../logger';
import { sendError } from '../http/respond';
import { GatewayError } from '../errors/gateway-error';

/** How a step answers what it throws (plugin/lifecycle/runner.ts). */
export type StepFailure = (err: unknown, req: Request, res: Response) => void;

/**
 * The failure answer the policy steps share: the error answered in the error body with the request's correlation
 * id. One that is not a GatewayError is a bug rather than an answer, so it is logged too, in the words `logged` gives
 * it, on `log` (never sent to the client). Made once per policy and runtime.
 */
export function answerStepError(log: Pick<Logger, 'error'>, logged: (err: unknown) => string): StepFailure {
  return (err, req, res) => {
    const { correlationId } = traceOf(req, res);
    if (!(err instanceof GatewayError)) log.error(`[${correlationId}] ${logged(err)}`);
    sendError(res, err, correlationId);
  };
}
