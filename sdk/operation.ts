import type { FromSchema, JSONSchema } from 'json-schema-to-ts';
import type { Contract, HttpMethod } from '../plugin/contracts/types';
import type { Answer, HandlerContext, Operation } from './serve';

/** A contract whose schemas keep their literal types (written inline, or declared `as const`: lists may be readonly). */
export type TypedContract = Omit<
  Contract,
  'targetService' | 'inputSchema' | 'outputSchema' | 'requiredPermissions' | 'http'
> & {
  inputSchema: Exclude<JSONSchema, boolean>;
  outputSchema: Exclude<JSONSchema, boolean>;
  requiredPermissions: readonly string[];
  http?: { readonly method: HttpMethod; readonly paths: readonly string[] };
};

/** The handler's input: what the contract's inputSchema accepts (the gateway validated it before sending). */
export type InputOf<C extends TypedContract> = FromSchema<C['inputSchema']>;
/** The handler's output: what the contract's outputSchema describes, bare or with a status and Location. */
export type OutputOf<C extends TypedContract> = FromSchema<C['outputSchema']> | Answer<FromSchema<C['outputSchema']>>;

/** A handler whose input and output are the types the contract's schemas describe. */
export type TypedHandler<C extends TypedContract> = (
  input: InputOf<C>,
  ctx: HandlerContext,
) => OutputOf<C> | Promise<OutputOf<C>>;

/**
 * An operation for serve() whose handler is typed from the contract's JSON Schemas (json-schema-to-ts):
 * `operation(contract).handle((input) => …)` reads `input.productId` as a string, and a result missing a required
 * output field does not compile. Two calls, not one: inferred in one call with its handler, the schema's type is
 * too deep for the compiler.
 */
export function operation<const C extends TypedContract>(contract: C): { handle(handler: TypedHandler<C>): Operation } {
  const plain: Operation['contract'] = {
    ...contract,
    inputSchema: { ...contract.inputSchema },
    outputSchema: { ...contract.outputSchema },
    requiredPermissions: [...contract.requiredPermissions],
    http: contract.http && { method: contract.http.method, paths: [...contract.http.paths] },
  };
  if (!contract.http) delete plain.http;
  return {
    handle: (handler) => ({
      contract: plain,
      // The one narrowing: the gateway validated the input against inputSchema before sending it.
      // (`never`: naming InputOf<C> of a contract not yet known is too deep for the compiler.)
      handle: (input, ctx) => handler(input as never, ctx),
    }),
  };
}
