import type { Request } from 'express';
import type { Runtime } from '../plugin/runtime';

/**
 * `contract-available`: true while a service announces the given message type. Lets a hand-written pipeline
 * step run only when a contract is there (e.g. proxy elsewhere while the service is away).
 * Two parameters: the host calls it per request with (req, config).
 */
export function contractAvailableCondition(runtime: Runtime) {
  return {
    name: 'contract-available',
    schema: {
      $id: 'http://express-gateway.io/schemas/conditions/contract-available.json',
      type: 'object',
      properties: { messageType: { type: 'string', minLength: 1 } },
      required: ['messageType'],
    },
    handler: (_req: Request, config: { messageType: string }): boolean => runtime.contract(config.messageType) !== undefined,
  };
}
