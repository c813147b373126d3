import type { Request } from 'express';
import type { RequestServices } from '../plugin/parts/request-services';
import { CONDITION_NAMES, conditionSchemaId } from '../plugin/policy-names';

/**
 * `contract-available`: true while a service announces the given message type. Lets a hand-written pipeline
 * step run only when a contract is there (e.g. proxy elsewhere while the service is away).
 * One parameter: the host calls it once per step when it builds the pipeline (so a bad config is refused then, see
 * plugin/host/pipeline-check.ts) and calls what it returns per request.
 */
export function contractAvailableCondition(services: Pick<RequestServices, 'contract'>) {
  return {
    name: CONDITION_NAMES.contractAvailable,
    schema: {
      $id: conditionSchemaId(CONDITION_NAMES.contractAvailable),
      type: 'object',
      properties: { messageType: { type: 'string', minLength: 1 } },
      required: ['messageType'],
    },
    handler:
      (config: { messageType: string }) =>
      (_req: Request): boolean =>
        services.contract(config.messageType) !== undefined,
  };
}
