import type { Request, Response } from 'express';
import { schema } from './schema';
import { POLICY_NAMES } from '../../plugin/policy-names';
import { traceIn, traceOf } from '../../plugin/request/trace';
import {
  contractOf,
  type ResolvedContract,
  type RouteAction,
  type ContractSource,
} from '../../plugin/pipeline/resolve-contract';
import { inputOf } from '../../plugin/pipeline/message-input';
import { checkContractAccess } from '../../plugin/auth/access-check';
import type { RequestContext } from '../../plugin/request/context';
import type { RequestServices } from '../../plugin/parts/request-services';
import { sendJsonText } from '../../plugin/http/respond';
import { describeError } from '../../plugin/errors/describe';
import { fromServiceError } from '../../plugin/errors/error-body';
import { kindStatus } from '../../plugin/contracts/success-status';
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
import { traceContextOf } from '../../plugin/observability/request-observer';

export interface RouterAction extends RouteAction {
  timeoutMs?: number;
  /** Hand-written pipelines: serve the contract without its permission check (the steps before decide). */
  public?: boolean;
}

/** What the step uses: the contracts, the guarded bus, the validators and what it remembers of replies, the deprecations, the metrics, whether the graceful stop has run out. */
type Uses = ContractSource &
  Pick<
    RequestServices,
    | 'log'
    | 'settings'
    | 'transport'
    | 'validators'
    | 'outputSamples'
    | 'replyWarnings'
    | 'successStatuses'
    | 'deprecations'
    | 'metrics'
    | 'stopping'
  >;

/**
 * The last step of every generated pipeline: sends the request as a command or query to the contract's
 * service and turns the reply into the HTTP answer (201 create, 204 delete, 200 otherwise, or the service's 2xx).
 */
export function contractRouterPolicy(services: Uses) {
  return {
    name: POLICY_NAMES.contractRouter,
    schema,
    policy: (action: RouterAction) => runner([contractRouterStep(services, action)]),
  };
}

function contractRouterStep(services: Uses, action: RouterAction): Step<ResolvedContract> {
  const failed = answerStepError(services.log, describeError);
  /** The request's contract, once its caller may use it; the body is read only for a request let on here. */
  const admit = (req: Request, ctx: RequestContext): ResolvedContract => {
    const resolved = contractOf(ctx, req, action, services);
    // The contract's permissions hold wherever it is served, unless a step decided on access before or the route is public.
    if (action.public !== true) checkContractAccess(ctx, resolved.contract);
    return resolved;
  };
  // Waits only for the bus.
  const run = async (req: Request, res: Response, ctx: RequestContext, resolved: ResolvedContract): Promise<void> => {
    announceDeprecation(services, req, res, resolved.contract);
    const input = inputOf(ctx, req, resolved);
    respond(await sendMessage(services, req, res, ctx, resolved.contract, input, action.timeoutMs), resolved, req, res);
  };
  return { needs: { body: 'input', route: action, limits: services.settings }, admit, run, failed };
}

/** A deprecated (or sunsetting) contract's answers say so, whatever they are; its calls are counted by route. */
function announceDeprecation(services: Uses, req: Request, res: Response, contract: Contract): void {
  const headers = services.deprecations.of(contract.messageType);
  if (headers === undefined) return;
  if (headers.Deprecation !== undefined) {
    res.setHeader('Deprecation', headers.Deprecation);
    services.metrics?.deprecatedRequest(req, contract.messageType);
  }
  if (headers.Sunset !== undefined) res.setHeader('Sunset', headers.Sunset);
}

interface Answer {
  services: Uses;
  contract: Contract;
  reply: Reply;
}

/** The request as a message to the contract's service; settles with the service's reply. */
async function sendMessage(
  services: Uses,
  req: Request,
  res: Response,
  ctx: RequestContext,
  contract: Contract,
  input: Record<string, unknown>,
  actionTimeoutMs: number | undefined,
): Promise<Answer> {
  const trace = traceIn(ctx, req, res);
  // The route's own timeout is the operator's; a contract's is capped (maxRequestTimeoutMs).
  const timeoutMs = actionTimeoutMs ?? contractTimeoutMs(contract, services.settings);
  // A stopping gateway whose grace period has ended answers 503 (requests already waiting: see GracefulStop).
  if (services.stopping.isAborted) throw shuttingDown();
  // req.ip follows the host's trust proxy setting: X-Forwarded-For counts only behind a trusted proxy.
  const call = new BusCall(
    services.metrics,
    contract.targetService,
    contract.messageType,
    services.transport,
    traceContextOf(req),
  );
  const headers: MessageHeaders = {
    correlationId: trace.correlationId,
    requestId: trace.requestId,
    user: ctx.caller,
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
      services.transport.request(
        { messageType: contract.messageType, targetService: contract.targetService, input, headers },
        timeoutMs,
      ),
    );
  } catch (err) {
    call.failed(err);
    throw err;
  }
  call.replied(reply);
  return { services, contract, reply };
}

/** The service's reply as the HTTP answer: its status, its checked result, its Location. */
function respond({ services, contract, reply }: Answer, resolved: ResolvedContract, req: Request, res: Response): void {
  if (reply.replayed) res.setHeader(REPLAYED_HEADER, 'true');
  if (!reply.ok) throw fromServiceError(reply.error, contract.targetService);
  const status = replyStatus(reply.status, contract, services) ?? routeStatus(services, resolved, req.method);
  // Checked before any header is set: a result refused in strict mode must not leave a Location behind. The result
  // is read (parsed) only when the check or writeOnly removal needs it.
  const body =
    status === 204
      ? undefined
      : responseJson(
          services,
          contract,
          () => reply.result ?? null,
          resultJsonOf(reply),
          traceOf(req, res).correlationId,
        );
  const location = replyLocation(reply.location, contract, services);
  if (location) res.setHeader('Location', location);
  sendJsonText(res, status, body);
}

/** The route's success status: by the kind its route action carries; a hand-written action's, from the message type. */
function routeStatus(services: Uses, resolved: ResolvedContract, method: string): number {
  return resolved.kind !== undefined
    ? kindStatus(resolved.kind, method)
    : services.successStatuses.of(resolved.contract.messageType, method);
}
