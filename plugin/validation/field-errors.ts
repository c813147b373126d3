import type { ErrorObject } from 'ajv';
import { GatewayError } from '../errors/gateway-error';
import type { ErrorCode } from '../errors/codes';

/** One failed check, as the client sees it: a field path (`profile.firstName`) and a readable message. */
export interface FieldError {
  field: string;
  message: string;
  /** The JSON Schema keyword that failed; decides the error code. */
  keyword: string;
}

/** Name of the whole input when the failure is not about one field. */
const ROOT_FIELD = 'input';

/** A body with a huge array of bad items must not become a huge error body. */
export const MAX_REPORTED_ERRORS = 100;

/** `/profile/firstName` → `profile.firstName` (JSON Pointer unescaped), with an optional child appended. */
export function fieldPath(instancePath: string, child?: string): string {
  const parts =
    instancePath === ''
      ? []
      : instancePath
          .slice(1)
          .split('/')
          .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (child !== undefined) parts.push(child);
  return parts.length ? parts.join('.') : ROOT_FIELD;
}

const FORMAT_NAMES: Record<string, string> = {
  email: 'email address',
  'idn-email': 'email address',
  'date-time': 'date-time (ISO 8601)',
  date: 'date (YYYY-MM-DD)',
  time: 'time',
  uuid: 'UUID',
  uri: 'URI',
  'uri-reference': 'URI reference',
  url: 'URL',
  hostname: 'hostname',
  ipv4: 'IPv4 address',
  ipv6: 'IPv6 address',
  duration: 'duration (ISO 8601)',
  regex: 'regular expression',
};

function article(type: string): string {
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`;
}

function list(values: unknown[]): string {
  const shown = values.slice(0, 20).map((v) => (typeof v === 'string' ? v : JSON.stringify(v)));
  return values.length > 20 ? `${shown.join(', ')}, …` : shown.join(', ');
}

/** A message in plain words for the keywords clients meet most; ajv's own text for the rest. */
function messageOf(e: ErrorObject): string {
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'required':
      return 'is required';
    case 'dependentRequired':
    case 'dependencies':
      return `is required when ${String(p.property)} is present`;
    case 'type': {
      const t = String(p.type);
      return t.includes(',') ? `must be one of the types ${t.split(',').join(', ')}` : `must be ${article(t)}`;
    }
    case 'format': {
      const f = String(p.format);
      return FORMAT_NAMES[f] ? `must be a valid ${FORMAT_NAMES[f]}` : `must match the format "${f}"`;
    }
    case 'minLength':
      return p.limit === 1 ? 'must not be empty' : `must be at least ${String(p.limit)} characters long`;
    case 'maxLength':
      return `must be at most ${String(p.limit)} characters long`;
    case 'minimum':
      return `must be greater than or equal to ${String(p.limit)}`;
    case 'maximum':
      return `must be less than or equal to ${String(p.limit)}`;
    case 'exclusiveMinimum':
      return `must be greater than ${String(p.limit)}`;
    case 'exclusiveMaximum':
      return `must be less than ${String(p.limit)}`;
    case 'multipleOf':
      return `must be a multiple of ${String(p.multipleOf)}`;
    case 'minItems':
      return `must have at least ${String(p.limit)} items`;
    case 'maxItems':
      return `must have at most ${String(p.limit)} items`;
    case 'minProperties':
      return `must have at least ${String(p.limit)} properties`;
    case 'maxProperties':
      return `must have at most ${String(p.limit)} properties`;
    case 'uniqueItems':
      return 'must not contain duplicate items';
    case 'enum':
      return `must be one of: ${list(Array.isArray(p.allowedValues) ? p.allowedValues : [])}`;
    case 'const':
      return `must be ${JSON.stringify(p.allowedValue)}`;
    case 'pattern':
      return `must match the pattern ${String(p.pattern)}`;
    case 'additionalProperties':
    case 'unevaluatedProperties':
      return 'is not allowed';
    case 'anyOf':
      return 'must match one of the allowed forms';
    case 'oneOf':
      return 'must match exactly one of the allowed forms';
    case 'not':
      return 'is not allowed in this form';
    default:
      return e.message ?? 'is invalid';
  }
}

/** The field an error is about: a missing or refused property is named itself, not its parent object. */
function fieldOf(e: ErrorObject): string {
  const p = e.params as Record<string, unknown>;
  if (e.keyword === 'required' || e.keyword === 'dependentRequired' || e.keyword === 'dependencies') {
    return fieldPath(e.instancePath, String(p.missingProperty));
  }
  if (e.keyword === 'additionalProperties') return fieldPath(e.instancePath, String(p.additionalProperty));
  if (e.keyword === 'unevaluatedProperties') return fieldPath(e.instancePath, String(p.unevaluatedProperty));
  return fieldPath(e.instancePath);
}

/**
 * Drops the noise of combinators: the errors of each failed anyOf/oneOf branch (the combinator's own error
 * says it better; a branch's "is required" would mislead), and the `if` error that only restates its `then`.
 */
function withoutNoise(errors: readonly ErrorObject[]): ErrorObject[] {
  const combinators = errors
    .filter((e) => e.keyword === 'anyOf' || e.keyword === 'oneOf')
    .map((e) => `${e.schemaPath}/`);
  return errors.filter((e) => e.keyword !== 'if' && !combinators.some((prefix) => e.schemaPath.startsWith(prefix)));
}

/** ajv's errors as the client's field errors, de-duplicated, at most MAX_REPORTED_ERRORS. */
export function toFieldErrors(errors: readonly ErrorObject[] | null | undefined): FieldError[] {
  const out: FieldError[] = [];
  const seen = new Set<string>();
  for (const e of withoutNoise(errors ?? [])) {
    const fe = { field: fieldOf(e), message: messageOf(e), keyword: e.keyword };
    const key = `${fe.field}\u0000${fe.message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(fe);
    if (out.length >= MAX_REPORTED_ERRORS) break;
  }
  return out;
}

/** Codes: one specific failure gets its own code; several (or any other kind) are VALIDATION_ERROR. */
export function codeFor(errors: readonly FieldError[]): ErrorCode {
  if (errors.length !== 1) return 'VALIDATION_ERROR';
  switch (errors[0]!.keyword) {
    case 'required':
    case 'dependentRequired':
    case 'dependencies':
      return 'MISSING_REQUIRED_FIELD';
    case 'type':
      return 'INVALID_TYPE';
    case 'format':
      return 'INVALID_FORMAT';
    default:
      return 'VALIDATION_ERROR';
  }
}

/**
 * The 400 for input that failed its schema, in the error body: `details` maps field → message,
 * `validationErrors` lists `{ field, message }`.
 */
export function inputValidationError(ajvErrors: readonly ErrorObject[] | null | undefined): GatewayError {
  const errors = toFieldErrors(ajvErrors);
  if (errors.length === 0) errors.push({ field: ROOT_FIELD, message: 'is invalid', keyword: 'unknown' });
  // A Map, then fromEntries: a field named "__proto__" becomes an ordinary key, never a prototype.
  const byField = new Map<string, string>();
  for (const e of errors)
    byField.set(e.field, byField.has(e.field) ? `${byField.get(e.field)}; ${e.message}` : e.message);
  const details = Object.fromEntries(byField);
  const first = errors[0]!;
  const message =
    errors.length === 1 ? `${first.field} ${first.message}` : `The input failed validation (${errors.length} errors)`;
  return new GatewayError(codeFor(errors), message, {
    details,
    extra: { validationErrors: errors.map(({ field, message: m }) => ({ field, message: m })) },
  });
}
