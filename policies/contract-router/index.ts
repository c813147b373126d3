import type { Request, Response, NextFunction } from 'express';
import { schema } from './schema';
import { traceOf } from '../../plugin/request/trace';
import { resolveContract, type RouteAction } from '../../plugin/pipeline/resolve-contract';
import { messageInput } from '../../plugin/pipeline/message-input';
import { requestUser } from '../../plugin/pipeline/user';
import { currentRuntime, startedRuntime } from '../../plugin/runtime';
import { sendError, sendJson } from '../../plugin/http/respond';
import { describeError, fromServiceError, GatewayError } from '../../plugin/errors';
import { successStatus } from './success-status';
import { responseBody } from '../../plugin/validation/output';
import { gracefulStop, shuttingDown } from '../../plugin/shutdown';

interface RouterAction extends RouteAction {
  timeoutMs?: number;
}

/**
 * The last step of every generated pipeline: sends the request as a command or query to the contract's
 * service and turns the reply into the HTTP answer (spec: "Status codes of generated endpoints").
 */
function contractRouter(action: RouterAction) {
  return async (req: Request, res: Response, _next: NextFunction): Promise<void> => {
    const trace = traceOf(req, res);
    try {
      const runtime = startedRuntime();
      const resolved = await resolveContract(req, res, action);
      const input = await messageInput(req, res, resolved);
      const { contract } = resolved;
      const timeoutMs = action.timeoutMs ?? contract.timeoutMs ?? runtime.settings.requestTimeoutMs;
      // A stopping gateway whose grace period has ended answers 503 (requests already waiting: see GracefulStop).
      if (gracefulStop().isAborted) throw shuttingDown();
      const reply = await runtime.transport.request(
        {
          messageType: contract.messageType,
          targetService: contract.targetService,
          input,
          headers: { correlationId: trace.correlationId, requestId: trace.requestId, user: requestUser(req), traceparent: trace.traceparent },
        },
        timeoutMs,
      );
      if (!reply.ok) throw fromServiceError(reply.error);
      const status = reply.status !== undefined && reply.status >= 200 && reply.status < 300 ? reply.status : successStatus(contract.messageType, req.method);
      // Checked before any header is set: a result refused in strict mode must not leave a Location behind.
      const body = status === 204 ? undefined : responseBody(runtime, contract, reply.result ?? null, trace.correlationId);
      if (reply.location && isSafeLocation(reply.location)) res.setHeader('Location', reply.location);
      sendJson(res, status, body);
    } catch (err) {
      if (!(err instanceof GatewayError)) currentRuntime()?.log.error(`[${trace.correlationId}] ${describeError(err)}`);
      sendError(res, err, trace.correlationId);
    }
  };
}

/** A service may only point at our own API. */
function isSafeLocation(location: string): boolean {
  return /^\/api\/[A-Za-z0-9/._~%-]*$/.test(location);
}

export const contractRouterPolicy = { name: 'contract-router', schema, policy: contractRouter };
