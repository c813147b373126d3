import type { Request, Response } from 'express';
import { schema } from './schema';
import { contractAtHand, contractOnceRead, routeOf, type ResolvedContract, type RouteAction } from '../../plugin/pipeline/resolve-contract';
import { inputAtHand, inputOnceRead } from '../../plugin/pipeline/message-input';
import type { Runtime } from '../../plugin/runtime';
import { GatewayError, errorMessage } from '../../plugin/errors';
import type { JsonSchema } from '../../plugin/contracts/types';
import { compileInline, inputValidationError, type Compiled } from '../../plugin/validation';
import { answerStepError } from '../../plugin/pipeline/step-error';
import { runner, type Step } from '../../plugin/lifecycle/runner';
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
  return { name: 'schema-validation', schema, policy: (action: ValidationAction) => runner([schemaValidationStep(runtime, action)]) };
}

export function schemaValidationStep(runtime: Runtime, action: ValidationAction): Step {
  const failed = answerStepError(runtime.log, (err) => `schema-validation: ${errorMessage(err)}`);
  const inline = action.schema ? compileInline(action.schema) : undefined;
  if (inline && !inline.ok) runtime.log.error(`schema-validation: an inline schema does not compile (${inline.reason}); its pipeline answers 500`);
  // Binds the compile cache to discovery now, so a contract's broken schema is logged when it is announced.
  void runtime.validators;

  /** What the input must pass: an inline schema (on the route's contract when it has one), else the contract's. */
  const targetOf = (resolved: ResolvedContract): Target =>
    inline && action.schema ? inlineTarget(resolved, action.schema, inline) : contractTarget(resolved, runtime);

  const run = (req: Request, res: Response): void | Promise<void> => {
    // An inline schema also checks routes that serve no contract.
    const resolved = inline && !routeOf(req, action) ? NO_CONTRACT : contractAtHand(req, action, runtime);
    return resolved ? validate(req, res, targetOf(resolved), runtime) : validateOnceRead(req, res);
  };
  const validateOnceRead = async (req: Request, res: Response): Promise<void> =>
    validate(req, res, targetOf(await contractOnceRead(req, res, action, runtime)), runtime);

  return { run, failed };
}

interface Target {
  resolved: ResolvedContract;
  validator: Compiled;
}

const NO_CONTRACT: ResolvedContract = { contract: { messageType: '', targetService: '', inputSchema: {}, outputSchema: {}, requiredPermissions: [] }, dispatched: false };

/** Throws the answer unless the request's input passes its schema (defaults filled in). */
function validate(req: Request, res: Response, { resolved, validator }: Target, runtime: Runtime): void | Promise<void> {
  if (!validator.ok) throw new GatewayError('INTERNAL_ERROR', BROKEN_CONTRACT);
  // The input object is the one contract-router sends: defaults filled in here travel with the message.
  const input = inputAtHand(req, resolved);
  return input ? check(input, validator.validate) : checkOnceRead(req, res, resolved, validator.validate, runtime);
}

async function checkOnceRead(req: Request, res: Response, resolved: ResolvedContract, validate: ValidateFunction, runtime: Runtime): Promise<void> {
  check(await inputOnceRead(req, res, resolved, runtime.settings), validate);
}

function check(input: Record<string, unknown>, validate: ValidateFunction): void {
  if (!validate(input)) throw inputValidationError(validate.errors);
}

/** The inline schema also decides how query-string values are converted, so they meet the schema that checks them. */
function inlineTarget(base: ResolvedContract, schema: JsonSchema, inline: Compiled): Target {
  return { resolved: { ...base, contract: { ...base.contract, inputSchema: schema } }, validator: inline };
}

function contractTarget(resolved: ResolvedContract, runtime: Runtime): Target {
  const validators = runtime.validators;
  // A contract with any schema that does not compile is refused before it reaches the service: its output could not be checked either.
  const output = validators.validator(resolved.contract, 'output');
  return { resolved, validator: output.ok ? validators.validator(resolved.contract, 'input') : output };
}
