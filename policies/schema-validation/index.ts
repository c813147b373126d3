import type { Request } from 'express';
import { schema } from './schema';
import { POLICY_NAMES } from '../../plugin/policy-names';
import {
  contractOf,
  routeOf,
  type ResolvedContract,
  type RouteAction,
  type ContractSource,
} from '../../plugin/pipeline/resolve-contract';
import { inputOf } from '../../plugin/pipeline/message-input';
import type { RequestContext } from '../../plugin/request/context';
import type { RequestServices } from '../../plugin/parts/request-services';
import { GatewayError } from '../../plugin/errors/gateway-error';
import { errorMessage } from '../../plugin/errors/describe';
import type { JsonSchema } from '../../plugin/contracts/types';
import { compileInline, type Compiled } from '../../plugin/validation/validator-cache';
import { inputValidationError } from '../../plugin/validation/field-errors';
import { answerStepError } from '../../plugin/pipeline/step-error';
import { runner, type Step } from '../../plugin/lifecycle/runner';

export interface ValidationAction extends RouteAction {
  /** Validate against this instead of the contract's inputSchema (hand-written pipelines). */
  schema?: JsonSchema;
}

/** Never the ajv text: a broken contract is the operator's problem, and the log says which one. */
const BROKEN_CONTRACT = 'The service contract for this route is invalid';

/** What the step uses: the contracts, the log, the body limits, the contracts' validators. */
type Uses = ContractSource & Pick<RequestServices, 'log' | 'settings' | 'validators'>;

/**
 * The step before contract-router: checks the message input (body + path parameters + query string, as
 * inputOf builds it) against the contract's inputSchema, or an inline schema, and fills in its defaults.
 * Bad input is a 400 and never reaches the bus.
 */
export function schemaValidationPolicy(services: Uses) {
  return {
    name: POLICY_NAMES.schemaValidation,
    schema,
    policy: (action: ValidationAction) => runner([schemaValidationStep(services, action)]),
  };
}

function schemaValidationStep(services: Uses, action: ValidationAction): Step<Target> {
  const failed = answerStepError(services.log, (err) => `${POLICY_NAMES.schemaValidation}: ${errorMessage(err)}`);
  const inline = action.schema ? compileInline(action.schema) : undefined;
  if (inline && !inline.ok)
    services.log.error(
      `${POLICY_NAMES.schemaValidation}: an inline schema does not compile (${inline.reason}); its pipeline answers 500`,
    );

  /**
   * What the input must pass: an inline schema (on the route's contract when it has one), else the contract's. Throws
   * when there is none, so the body is read only for a request that gets as far as its input.
   */
  const admit = (req: Request, ctx: RequestContext): Target => {
    // An inline schema also checks routes that serve no contract.
    const resolved = inline && !routeOf(ctx, req, action) ? NO_CONTRACT : contractOf(ctx, req, action, services);
    const target =
      inline && action.schema ? inlineTarget(resolved, action.schema, inline) : contractTarget(resolved, services);
    if (!target.validator.ok) throw new GatewayError('INTERNAL_ERROR', BROKEN_CONTRACT);
    return target;
  };

  /** Throws the answer unless the request's input passes its schema (defaults filled in). */
  const run = (req: Request, _res: unknown, ctx: RequestContext, { resolved, validator }: Target): void => {
    // The input object is the one contract-router sends: defaults filled in here travel with the message.
    const input = inputOf(ctx, req, resolved);
    if (validator.ok && !validator.validate(input)) throw inputValidationError(validator.validate.errors);
  };

  return { needs: { body: 'input', route: action, limits: services.settings }, admit, run, failed };
}

interface Target {
  resolved: ResolvedContract;
  validator: Compiled;
}

const NO_CONTRACT: ResolvedContract = {
  contract: { messageType: '', targetService: '', inputSchema: {}, outputSchema: {}, requiredPermissions: [] },
  dispatched: false,
};

/** The inline schema also decides how query-string values are converted, so they meet the schema that checks them. */
function inlineTarget(base: ResolvedContract, schema: JsonSchema, inline: Compiled): Target {
  return { resolved: { ...base, contract: { ...base.contract, inputSchema: schema } }, validator: inline };
}

function contractTarget(resolved: ResolvedContract, services: Uses): Target {
  const validators = services.validators;
  // A contract with any schema that does not compile is refused before it reaches the service: its output could not be checked either.
  const output = validators.validator(resolved.contract, 'output');
  return { resolved, validator: output.ok ? validators.validator(resolved.contract, 'input') : output };
}
