import { describeError } from '../errors/describe';
import { internalErrorReply, isReply } from './envelope';
import type { Logger } from '../logger';
import type { Reply, RequestHandler, RequestMessage } from './transport';

/*
 * The service side's contract with a handler, shared by both transports: what a handler may return, and how its
 * reply becomes the JSON that crosses the bus.
 */

/**
 * Runs a service handler: a handler that throws, rejects or returns something that is not a reply envelope yields
 * INTERNAL_ERROR with no message (the cause is logged on the service side, never sent).
 */
export async function invokeHandler(handler: RequestHandler, message: RequestMessage, logger: Logger): Promise<Reply> {
  let reply: unknown;
  try {
    reply = await handler(message);
  } catch (err) {
    logger.error(
      `[${message.headers?.correlationId}] bus: handler for ${message.targetService}/${message.messageType} failed: ${describeError(err)}`,
    );
    return internalErrorReply();
  }
  if (!isReply(reply)) {
    logger.error(
      `[${message.headers?.correlationId}] bus: handler for ${message.targetService}/${message.messageType} returned no reply envelope`,
    );
    return internalErrorReply();
  }
  return reply;
}

/**
 * A reply as the JSON that goes back to the gateway; one that cannot be serialised (a cycle, a BigInt) becomes
 * INTERNAL_ERROR, logged under the request's trace id. `traceOf(request)` is only called then, so the hot path
 * pays for no trace id.
 */
export function replyJson<R>(
  reply: Reply,
  logger: Logger,
  traceOf: (request: R) => string,
  request: R,
  service: string,
  messageType: unknown,
): string {
  try {
    return JSON.stringify(reply);
  } catch (err) {
    logger.error(
      `[${traceOf(request)}] bus: reply of ${service}/${String(messageType)} is not JSON: ${describeError(err)}`,
    );
    return JSON.stringify(internalErrorReply());
  }
}
