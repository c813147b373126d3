import { sample } from 'openapi-sampler';
import type { Contract } from '../contracts/types';
import { compileSchema } from '../validation/ajv';
import { isRecord } from '../is-record';

/** Whether a contract's input schema accepts a value (the runtime passes its compiled validators). */
export type InputCheck = (contract: Contract, input: Record<string, unknown>) => boolean;

/** A check that compiles the schema itself: for a document built without the runtime (tests, tools). */
export const compilingInputCheck: InputCheck = (contract, input) => {
  try {
    return compileSchema(contract.inputSchema, 'input')(structuredClone(input)) === true;
  } catch {
    return false;
  }
};

/**
 * The Idempotency-Key example: a UUID, the form a client should send, which the docs page's script replaces with a
 * new one per request tried (a key sent again is a replay of its first request, or a 422 with another body).
 */
export const FRESH_IDEMPOTENCY_KEY = '4f1c2b8e-7d3a-4e5f-9b6c-1a2d3e4f5a6b';

function sampled(contract: Contract, skipNonRequired: boolean): Record<string, unknown> | undefined {
  try {
    // The schema is its own document: its local $refs (#/definitions/…, #/$defs/…) resolve inside it.
    const value = sample(
      contract.inputSchema as Parameters<typeof sample>[0],
      { skipReadOnly: true, quiet: true, enablePatterns: true, skipNonRequired },
      contract.inputSchema,
    );
    return isRecord(value) ? value : undefined;
  } catch {
    return undefined; // a schema the sampler cannot walk gets no example
  }
}

/**
 * An input the contract accepts, made from its schema (every field, else the required ones only), or undefined when
 * neither passes the contract's own validation: an operation shows no example rather than a wrong one.
 */
function inputExample(contract: Contract, check: InputCheck): Record<string, unknown> | undefined {
  for (const skipNonRequired of [false, true]) {
    const value = sampled(contract, skipNonRequired);
    if (value !== undefined && check(contract, value)) return value;
  }
  return undefined;
}

/** Each contract's example made once per document (a contract can be on several routes). */
export function exampleMaker(check: InputCheck): (contract: Contract) => Record<string, unknown> | undefined {
  const made = new Map<string, Record<string, unknown> | undefined>();
  return (contract) => {
    if (!made.has(contract.messageType)) made.set(contract.messageType, inputExample(contract, check));
    return made.get(contract.messageType);
  };
}

/** The example without the fields the path carries (a body example), or undefined when there is none. */
export function withoutFields(
  example: Record<string, unknown> | undefined,
  names: readonly string[],
): Record<string, unknown> | undefined {
  if (example === undefined) return undefined;
  return Object.fromEntries(Object.entries(example).filter(([k]) => !names.includes(k)));
}
