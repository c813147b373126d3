import type { Request, Response, NextFunction } from 'express';
import { schema } from './schema';
import { traceOf, type Trace } from '../../plugin/request/trace';
import { resolveContract, type RouteAction } from '../../plugin/pipeline/resolve-contract';
import { messageInput } from '../../plugin/pipeline/message-input';
import { requestUser } from '../../plugin/pipeline/user';
import { currentRuntime, startedRuntime, type Runtime } from '../../plugin/runtime';
import { sendError, sendJson } from '../../plugin/http/respond';
import { describeError, fromServiceError, GatewayError } from '../../plugin/errors';
import { successStatus } from './success-status';
import { responseBody } from '../../plugin/validation/output';
import { gracefulStop, shuttingDown } from '../../plugin/shutdown';
import { andThen, settle, type Maybe } from '../../plugin/pipeline/maybe';
import type { Contract } from '../../plugin/contracts/types';
import type { Reply } from '../../plugin/bus/transport';

interface RouterAction extends RouteAction {
  timeoutMs?: number;
}

/**
 * The last step of every generated pipeline: sends the request as a command or query to the contract's
 * service and turns the reply into the HTTP answer (spec: "Status codes of generated endpoints").
 * Written with settle/andThen rather than async/await: the contract and the input are nearly always at hand (resolved
 * by the steps before), so only the bus reply is waited for (each await of a known value costs a promise and a tick).
 */
function contractRouter(action: RouterAction) {
  return (req: Request, res: Response, _next: NextFunction): void => {
    const trace = traceOf(req, res);
    settle(
      () => forward(req, res, action, trace),
      (answer) => respond(req, res, answer, trace),
      (err) => {
        if (!(err instanceof GatewayError)) currentRuntime()?.log.error(`[${trace.correlationId}] ${describeError(err)}`);
        sendError(res, err, trace.correlationId);
      },
    );
  };
}

interface Answer {
  runtime: Runtime;
  contract: Contract;
  reply: Reply;
}

/** The request as a message to the contract's service; settles with the service's reply. */
function forward(req: Request, res: Response, action: RouterAction, trace: Trace): Maybe<Answer> {
  const runtime = startedRuntime();
  return andThen(resolveContract(req, res, action), (resolved) =>
    andThen(messageInput(req, res, resolved), (input) => {
      const { contract } = resolved;
      const timeoutMs = action.timeoutMs ?? contract.timeoutMs ?? runtime.settings.requestTimeoutMs;
      // A stopping gateway whose grace period has ended answers 503 (requests already waiting: see GracefulStop).
      if (gracefulStop().isAborted) throw shuttingDown();
      const headers = { correlationId: trace.correlationId, requestId: trace.requestId, user: requestUser(req), traceparent: trace.traceparent };
      return runtime.transport
        .request({ messageType: contract.messageType, targetService: contract.targetService, input, headers }, timeoutMs)
        .then((reply): Answer => ({ runtime, contract, reply }));
    }),
  );
}

/** The service's reply as the HTTP answer: its status, its checked result, its Location. */
function respond(req: Request, res: Response, { runtime, contract, reply }: Answer, trace: Trace): void {
  if (!reply.ok) throw fromServiceError(reply.error);
  const status = reply.status !== undefined && reply.status >= 200 && reply.status < 300 ? reply.status : successStatus(contract.messageType, req.method);
  // Checked before any header is set: a result refused in strict mode must not leave a Location behind.
  const body = status === 204 ? undefined : responseBody(runtime, contract, reply.result ?? null, trace.correlationId);
  if (reply.location && isSafeLocation(reply.location)) res.setHeader('Location', reply.location);
  sendJson(res, status, body);
}

/** A service may only point at our own API. */
function isSafeLocation(location: string): boolean {
  return /^\/api\/[A-Za-z0-9/._~%-]*$/.test(location);
}

export const contractRouterPolicy = { name: 'contract-router', schema, policy: contractRouter };
