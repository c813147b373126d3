import type { Request, Response } from 'express';
import { schema } from './schema';
import { POLICY_NAMES } from '../../plugin/policy-names';
import { traceOf } from '../../plugin/request/trace';
import { contractOf, type ResolvedContract, type RouteAction } from '../../plugin/pipeline/resolve-contract';
import { inputNeed, inputOf } from '../../plugin/pipeline/message-input';
import { requestUser } from '../../plugin/pipeline/user';
import { checkContractAccess } from '../../plugin/auth/access-check';
import type { Runtime } from '../../plugin/runtime';
import { sendJsonText } from '../../plugin/http/respond';
import { describeError } from '../../plugin/errors/describe';
import { fromServiceError } from '../../plugin/errors/error-body';
import { replyLocation, replyStatus } from './reply-checks';
import { responseJson } from '../../plugin/validation/output';
import { resultJsonOf } from '../../plugin/bus/envelope';
import { shuttingDown } from '../../plugin/shutdown/http-drain';
import { answerStepError } from '../../plugin/pipeline/step-error';
import { runner, type Step } from '../../plugin/lifecycle/runner';
import type { Contract } from '../../plugin/contracts/types';
import { contractTimeoutMs } from '../../plugin/contracts/timeouts';
import type { MessageHeaders, Reply } from '../../plugin/bus/transport';
import { idempotencyKeyOf, REPLAYED_HEADER } from '../../plugin/pipeline/idempotency-key';
import { BusCall } from '../../plugin/observability/bus-call';
import { requestContextOf } from '../../plugin/observability/request-observer';

export interface RouterAction extends RouteAction {
  timeoutMs?: number;
  /** Hand-written pipelines: serve the contract without its permission check (the steps before decide). */
  public?: boolean;
}

/**
 * The last step of every generated pipeline: sends the request as a command or query to the contract's
 * service and turns the reply into the HTTP answer (201 create, 204 delete, 200 otherwise, or the service's 2xx).
 */
export function contractRouterPolicy(runtime: Runtime) {
  return {
    name: POLICY_NAMES.contractRouter,
    schema,
    policy: (action: RouterAction) => runner([contractRouterStep(runtime, action)]),
  };
}

function contractRouterStep(runtime: Runtime, action: RouterAction): Step {
  const failed = answerStepError(runtime.log, describeError);
  /** The request's contract, once its caller may use it. */
  const admitted = (req: Request): ResolvedContract => {
    const resolved = contractOf(req, action, runtime);
    // The contract's permissions hold wherever it is served, unless a permission step decided before or the route is public.
    if (action.public !== true) checkContractAccess(req, resolved.contract);
    return resolved;
  };
  // Waits only for the bus.
  const run = async (req: Request, res: Response): Promise<void> => {
    const resolved = admitted(req);
    announceDeprecation(runtime, req, res, resolved.contract);
    respond(
      await sendMessage(runtime, req, res, resolved.contract, inputOf(req, resolved), action.timeoutMs),
      req,
      res,
    );
  };
  /** The body is read only for a request the router lets on. */
  const reachesInput = (req: Request): boolean => {
    try {
      admitted(req);
      return true;
    } catch {
      return false;
    }
  };
  return { run, failed, body: inputNeed(action, runtime.settings, reachesInput) };
}

/** A deprecated (or sunsetting) contract's answers say so, whatever they are; its calls are counted by route. */
function announceDeprecation(runtime: Runtime, req: Request, res: Response, contract: Contract): void {
  const headers = runtime.deprecations.of(contract.messageType);
  if (headers === undefined) return;
  if (headers.Deprecation !== undefined) {
    res.setHeader('Deprecation', headers.Deprecation);
    runtime.observability.metrics?.deprecatedRequest(req, contract.messageType);
  }
  if (headers.Sunset !== undefined) res.setHeader('Sunset', headers.Sunset);
}

interface Answer {
  runtime: Runtime;
  contract: Contract;
  reply: Reply;
}

/** The request as a message to the contract's service; settles with the service's reply. */
async function sendMessage(
  runtime: Runtime,
  req: Request,
  res: Response,
  contract: Contract,
  input: Record<string, unknown>,
  actionTimeoutMs: number | undefined,
): Promise<Answer> {
  const trace = traceOf(req, res);
  // The route's own timeout is the operator's; a contract's is capped (maxRequestTimeoutMs).
  const timeoutMs = actionTimeoutMs ?? contractTimeoutMs(contract, runtime.settings);
  // A stopping gateway whose grace period has ended answers 503 (requests already waiting: see GracefulStop).
  if (runtime.gracefulStop.isAborted) throw shuttingDown();
  // req.ip follows the host's trust proxy setting: X-Forwarded-For counts only behind a trusted proxy.
  const call = new BusCall(
    runtime.observability.metrics,
    contract.targetService,
    contract.messageType,
    runtime.transport,
    requestContextOf(req),
  );
  const headers: MessageHeaders = {
    correlationId: trace.correlationId,
    requestId: trace.requestId,
    user: requestUser(req),
    deadline: Date.now() + Math.ceil(timeoutMs),
    clientAddress: req.ip,
  };
  const idempotencyKey = idempotencyKeyOf(req, contract.messageType);
  if (idempotencyKey !== undefined) headers.idempotencyKey = idempotencyKey;
  // The bus span's trace context when there is one, else the caller's: the service continues it.
  call.inject(headers);
  let reply: Reply;
  try {
    reply = await call.run(() =>
      runtime.transport.request(
        { messageType: contract.messageType, targetService: contract.targetService, input, headers },
        timeoutMs,
      ),
    );
  } catch (err) {
    call.failed(err);
    throw err;
  }
  call.replied(reply);
  return { runtime, contract, reply };
}

/** The service's reply as the HTTP answer: its status, its checked result, its Location. */
function respond({ runtime, contract, reply }: Answer, req: Request, res: Response): void {
  if (reply.replayed) res.setHeader(REPLAYED_HEADER, 'true');
  if (!reply.ok) throw fromServiceError(reply.error, contract.targetService);
  const status =
    replyStatus(reply.status, contract, runtime) ?? runtime.successStatuses.of(contract.messageType, req.method);
  // Checked before any header is set: a result refused in strict mode must not leave a Location behind. The result
  // is read (parsed) only when the check or writeOnly removal needs it.
  const body =
    status === 204
      ? undefined
      : responseJson(
          runtime,
          contract,
          () => reply.result ?? null,
          resultJsonOf(reply),
          traceOf(req, res).correlationId,
        );
  const location = replyLocation(reply.location, contract, runtime);
  if (location) res.setHeader('Location', location);
  sendJsonText(res, status, body);
}
