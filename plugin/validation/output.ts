import type { ValidateFunction } from 'ajv';
import type { Contract } from '../contracts/types';
import { badGateway, GatewayError } from '../errors/gateway-error';
import type { Logger } from '../logger';
import type { ValidatorCache } from './validator-cache';
import { toFieldErrors } from './field-errors';
import { mentionsWriteOnly, stripWriteOnly } from './write-only';

export interface OutputCheck {
  contract: Contract;
  result: unknown;
  correlationId: string;
  validators: ValidatorCache;
  /** The runtime's count of matching replies per contract (OutputSamples). */
  samples: OutputSamples;
  log: Logger;
  /** Answer 502 instead of passing on a result that does not match the outputSchema. */
  strict: boolean;
}

/** How many field errors of a bad result the log line names (never the values: they may be personal data). */
const LOGGED_ERRORS = 10;

/**
 * With `strictOutput` off, a contract's replies are all checked until this many in a row have matched its
 * outputSchema, then one in SAMPLE_EVERY (a mismatch starts the count again): a service that answers well is not
 * checked at full cost on every request (bench/REPORT.md), one that drifts is still caught and logged.
 */
export const CHECK_UNTIL_PASSED = 100;
export const SAMPLE_EVERY = 16;

/**
 * Per contract (the registry's pooled object: a changed contract is a new one and starts again), the replies seen since the last mismatch.
 * The runtime owns one (docs/design.md, "where state lives"), so two runtimes in one process count apart.
 */
export class OutputSamples {
  private readonly passed = new WeakMap<Contract, number>();

  worthChecking(contract: Contract, strict: boolean): boolean {
    if (strict) return true;
    const n = this.passed.get(contract) ?? 0;
    if (n < CHECK_UNTIL_PASSED) return true;
    this.passed.set(contract, n + 1);
    return (n - CHECK_UNTIL_PASSED) % SAMPLE_EVERY === SAMPLE_EVERY - 1;
  }

  noteChecked(contract: Contract, strict: boolean, ok: boolean): void {
    if (strict) return;
    if (!ok) this.passed.set(contract, 0);
    else {
      const n = this.passed.get(contract) ?? 0;
      if (n < CHECK_UNTIL_PASSED) this.passed.set(contract, n + 1);
    }
  }
}

/** The contract's compiled outputSchema; one that does not compile cannot be vouched for: 500. */
function compiledOutput(validators: ValidatorCache, contract: Contract): ValidateFunction {
  const compiled = validators.validator(contract, 'output');
  if (!compiled.ok) throw new GatewayError('INTERNAL_ERROR', 'The service contract for this route is invalid');
  return compiled.validate;
}

/** Checks one result: a mismatch is logged with the correlation id, and in strict mode answered 502. */
function check(
  validate: ValidateFunction,
  { contract, result, correlationId, samples, log, strict }: Omit<OutputCheck, 'validators'>,
): void {
  const ok = validate(result) as boolean;
  samples.noteChecked(contract, strict, ok);
  if (ok) return;
  const errors = toFieldErrors(validate.errors);
  const shown = errors
    .slice(0, LOGGED_ERRORS)
    .map((e) => `${e.field} ${e.message}`)
    .join('; ');
  const more = errors.length > LOGGED_ERRORS ? ` (and ${errors.length - LOGGED_ERRORS} more)` : '';
  log.warn(
    `[${correlationId}] ${contract.targetService} answered ${contract.messageType} with a result that does not match its outputSchema: ${shown}${more}${strict ? '; answered 502 (strictOutput)' : ''}`,
  );
  if (strict) throw badGateway(contract.targetService, 'The upstream service returned an invalid response');
}

/**
 * What the client gets from a service's result: checked against the contract's outputSchema (a mismatch is
 * logged with the correlation id, and in strict mode answered 502; not strict, a sample once the contract's replies
 * have matched a while), and without the properties the schema marks writeOnly. A contract whose outputSchema does
 * not compile cannot be vouched for: 500.
 */
export function checkOutput(o: OutputCheck): unknown {
  const validate = compiledOutput(o.validators, o.contract);
  if (o.samples.worthChecking(o.contract, o.strict)) check(validate, o);
  return stripWriteOnly(o.result, o.contract.outputSchema);
}

/** What responseJson takes from the runtime. */
export interface OutputContext {
  readonly validators: ValidatorCache;
  readonly outputSamples: OutputSamples;
  readonly log: Logger;
  readonly settings: { readonly strictOutput: boolean };
}

/**
 * checkOutput with the runtime's validators and settings (the one call contract-router makes), as JSON: the
 * service's own bytes of the result when the bus kept them (`resultJson`, proven JSON but not parsed) and nothing
 * changes it, else the checked result serialised. `result` is read only when something needs the value: the output
 * check (every reply in strict mode, else the sample), writeOnly properties in the outputSchema, or no bytes kept.
 * So with strictOutput off a reply that is not sampled, of a contract without writeOnly, is never parsed. In strict
 * mode always serialised: what the client gets is then exactly the value that was checked (duplicate keys, for one,
 * are gone).
 */
export function responseJson(
  context: OutputContext,
  contract: Contract,
  result: () => unknown,
  resultJson: string | Buffer | undefined,
  correlationId: string,
): string | Buffer {
  const strict = context.settings.strictOutput;
  const validate = compiledOutput(context.validators, contract);
  const samples = context.outputSamples;
  const checked = samples.worthChecking(contract, strict);
  const passedOn = resultJson !== undefined && !strict;
  if (passedOn && !checked && !mentionsWriteOnly(contract.outputSchema)) return resultJson;
  const value = result();
  if (checked) check(validate, { contract, result: value, correlationId, samples, log: context.log, strict });
  const body = stripWriteOnly(value, contract.outputSchema);
  return body === value && passedOn ? resultJson : JSON.stringify(body);
}
