import type { Contract } from '../contracts/types';
import { badGateway, GatewayError } from '../errors/gateway-error';
import type { Logger } from '../logger';
import type { ValidatorCache } from './validator-cache';
import { toFieldErrors } from './field-errors';
import { stripWriteOnly } from './write-only';

export interface OutputCheck {
  contract: Contract;
  result: unknown;
  correlationId: string;
  validators: ValidatorCache;
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

/** Per contract (the registry's object: a new announcement starts again), the replies seen since the last mismatch. */
const passed = new WeakMap<Contract, number>();

function worthChecking(contract: Contract, strict: boolean): boolean {
  if (strict) return true;
  const n = passed.get(contract) ?? 0;
  if (n < CHECK_UNTIL_PASSED) return true;
  passed.set(contract, n + 1);
  return (n - CHECK_UNTIL_PASSED) % SAMPLE_EVERY === SAMPLE_EVERY - 1;
}

function noteChecked(contract: Contract, strict: boolean, ok: boolean): void {
  if (strict) return;
  if (!ok) passed.set(contract, 0);
  else {
    const n = passed.get(contract) ?? 0;
    if (n < CHECK_UNTIL_PASSED) passed.set(contract, n + 1);
  }
}

/**
 * What the client gets from a service's result: checked against the contract's outputSchema (a mismatch is
 * logged with the correlation id, and in strict mode answered 502; not strict, a sample once the contract's replies
 * have matched a while), and without the properties the schema marks writeOnly. A contract whose outputSchema does
 * not compile cannot be vouched for: 500.
 */
export function checkOutput({ contract, result, correlationId, validators, log, strict }: OutputCheck): unknown {
  const compiled = validators.validator(contract, 'output');
  if (!compiled.ok) throw new GatewayError('INTERNAL_ERROR', 'The service contract for this route is invalid');
  if (worthChecking(contract, strict)) {
    const ok = compiled.validate(result) as boolean;
    noteChecked(contract, strict, ok);
    if (!ok) {
      const errors = toFieldErrors(compiled.validate.errors);
      const shown = errors.slice(0, LOGGED_ERRORS).map((e) => `${e.field} ${e.message}`).join('; ');
      const more = errors.length > LOGGED_ERRORS ? ` (and ${errors.length - LOGGED_ERRORS} more)` : '';
      log.warn(`[${correlationId}] ${contract.targetService} answered ${contract.messageType} with a result that does not match its outputSchema: ${shown}${more}${strict ? '; answered 502 (strictOutput)' : ''}`);
      if (strict) throw badGateway(contract.targetService, 'The upstream service returned an invalid response');
    }
  }
  return stripWriteOnly(result, contract.outputSchema);
}

/** What responseJson takes from the runtime. */
export interface OutputContext {
  readonly validators: ValidatorCache;
  readonly log: Logger;
  readonly settings: { readonly strictOutput: boolean };
}

/**
 * checkOutput with the runtime's validators and settings (the one call contract-router makes), as JSON: the
 * service's own bytes of the result when the bus kept them (`resultJson`) and nothing changed it (no writeOnly
 * property removed), else the checked result serialised. In strict mode always serialised: what the client gets is
 * then exactly the value that was checked (duplicate keys, for one, are gone).
 */
export function responseJson(context: OutputContext, contract: Contract, result: unknown, resultJson: string | Buffer | undefined, correlationId: string): string | Buffer {
  const strict = context.settings.strictOutput;
  const body = checkOutput({ contract, result, correlationId, validators: context.validators, log: context.log, strict });
  return body === result && resultJson !== undefined && !strict ? resultJson : JSON.stringify(body);
}
