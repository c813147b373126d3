import type { Request, Response, NextFunction } from 'express';
import { schema } from './schema';
import { traceOf } from '../../plugin/request/trace';
import { resolveContract, routeOf, type ResolvedContract, type RouteAction } from '../../plugin/pipeline/resolve-contract';
import { messageInput } from '../../plugin/pipeline/message-input';
import type { Runtime } from '../../plugin/runtime';
import { GatewayError, errorMessage } from '../../plugin/errors';
import type { JsonSchema } from '../../plugin/contracts/types';
import { compileInline, inputValidationError, type Compiled } from '../../plugin/validation';
import { andThen, settle, type Maybe } from '../../plugin/pipeline/maybe';
import { answerStepError } from '../../plugin/pipeline/step-error';
import type { ValidateFunction } from 'ajv';

export interface ValidationAction extends RouteAction {
  /** Validate against this instead of the contract's inputSchema (hand-written pipelines). */
  schema?: JsonSchema;
}

/** Never the ajv text: a broken contract is the operator's problem, and the log says which one. */
const BROKEN_CONTRACT = 'The service contract for this route is invalid';

/**
 * The step before contract-router: checks the message input (body + path parameters + query string, as
 * messageInput builds it) against the contract's inputSchema, or an inline schema, and fills in its defaults.
 * Bad input is a 400 and never reaches the bus.
 */
export function schemaValidationPolicy(runtime: Runtime) {
  const failed = answerStepError(runtime.log, (err) => `schema-validation: ${errorMessage(err)}`);
  return { name: 'schema-validation', schema, policy: (action: ValidationAction) => schemaValidation(runtime, failed, action) };
}

function schemaValidation(runtime: Runtime, failed: ReturnType<typeof answerStepError>, action: ValidationAction) {
  const inline = action.schema ? compileInline(action.schema) : undefined;
  if (inline && !inline.ok) runtime.log.error(`schema-validation: an inline schema does not compile (${inline.reason}); its pipeline answers 500`);
  // Binds the compile cache to discovery now, so a contract's broken schema is logged when it is announced.
  void runtime.validators;

  // Made once per policy; settle hands each request to it (no closure per request).
  const valid = (req: Request, res: Response): Maybe<void> => andThen(target(req, res, runtime, action, inline), validate, req, res, runtime);
  return (req: Request, res: Response, next: NextFunction): void => {
    traceOf(req, res);
    settle(valid, goOn, failed, req, res, next);
  };
}

/** Settles once the request's input passed its schema (defaults filled in); throws or rejects with the answer when not. */
function validate({ resolved, validator }: Target, req: Request, res: Response, runtime: Runtime): Maybe<void> {
  if (!validator.ok) throw new GatewayError('INTERNAL_ERROR', BROKEN_CONTRACT);
  // The input object is the one contract-router sends: defaults filled in here travel with the message.
  return andThen(messageInput(req, res, resolved, runtime.settings), checkInput, validator.validate);
}

function checkInput(input: Record<string, unknown>, validate: ValidateFunction): void {
  if (!validate(input)) throw inputValidationError(validate.errors);
}

function goOn(_valid: void, _req: Request, _res: Response, next: NextFunction): void {
  next();
}

interface Target {
  resolved: ResolvedContract;
  validator: Compiled;
}

/** Which contract (if any) the request is for, and the validator its input must pass. */
function target(req: Request, res: Response, runtime: Runtime, action: ValidationAction, inline: Compiled | undefined): Maybe<Target> {
  if (inline && action.schema) {
    const schema = action.schema;
    const base: Maybe<ResolvedContract> = routeOf(req, action)
      ? resolveContract(req, res, action, runtime)
      : { contract: { messageType: '', targetService: '', inputSchema: {}, outputSchema: {}, requiredPermissions: [] }, dispatched: false };
    // The inline schema also decides how query-string values are converted, so they meet the schema that checks them.
    return andThen(base, inlineTarget, schema, inline);
  }
  return andThen(resolveContract(req, res, action, runtime), contractTarget, runtime);
}

function inlineTarget(base: ResolvedContract, schema: JsonSchema, inline: Compiled): Target {
  return { resolved: { ...base, contract: { ...base.contract, inputSchema: schema } }, validator: inline };
}

function contractTarget(resolved: ResolvedContract, runtime: Runtime): Target {
  const validators = runtime.validators;
  // A contract with any schema that does not compile is refused before it reaches the service: its output could not be checked either.
  const output = validators.validator(resolved.contract, 'output');
  return { resolved, validator: output.ok ? validators.validator(resolved.contract, 'input') : output };
}
