import Ajv, { _, type Options, type ValidateFunction } from 'ajv';
import Ajv2019 from 'ajv/dist/2019';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { JsonSchema } from '../contracts/types';
import { linearRegExp } from './linear-regexp';

/** Which side of a message a schema checks: input is defaulted in place, output is only inspected. */
export type SchemaRole = 'input' | 'output';

/**
 * Options shared by both roles. Why each:
 * - allErrors: the caller gets every bad field at once, not one per round trip (of a value of fewer than
 *   ALL_ERRORS_MAX_VALUES values: see listingErrorsOfSmallValues);
 * - strict: false: contracts come from services and may carry annotations (example, x-…) ajv does not know;
 * - removeAdditional: false: a field the schema refuses must be reported, never silently dropped;
 * - coerceTypes: false: query-string and path values are converted in one place, plugin/request/input.ts,
 *   which knows where a value came from; a JSON body that sends "12" for an integer is a client error;
 * - no loadSchema: a contract's $ref is never fetched over the network;
 * - code.regExp: `pattern` and `patternProperties` run in linear time (linear-regexp.ts), whatever the contract says.
 */
const COMMON: Options = {
  allErrors: true,
  strict: false,
  removeAdditional: false,
  coerceTypes: false,
  logger: false,
  code: { regExp: linearRegExp },
};

type FormatsMode = 'full' | 'fast';

/**
 * Per role: ajv's options, and ajv-formats' mode. Input gets `full` formats (a date must exist: no February 30th). A
 * result is checked on every response only to notice a service drifting from its contract, and `full`'s date-time
 * check (split, two regular expressions, calendar arithmetic) was the largest part of that check's cost: `fast`
 * checks the shape with one regular expression.
 */
const ROLES: Record<SchemaRole, { options: Options; formats: FormatsMode }> = {
  input: { options: { ...COMMON, useDefaults: true }, formats: 'full' },
  output: { options: { ...COMMON, useDefaults: false }, formats: 'fast' },
};

type Dialect = '2020-12' | '2019-09' | 'draft-07';

/** The dialect a schema declares; no `$schema` means draft-07 (the most common in contracts). */
export function dialectOf(schema: JsonSchema): Dialect {
  const declared = schema.$schema;
  if (declared === undefined) return 'draft-07';
  if (typeof declared !== 'string') throw new Error('$schema must be a string');
  if (declared.includes('2020-12')) return '2020-12';
  if (declared.includes('2019-09')) return '2019-09';
  if (declared.includes('draft-07')) return 'draft-07';
  throw new Error(`unsupported $schema ${declared}`);
}

type AjvInstance = InstanceType<typeof Ajv>;

function newAjv(dialect: Dialect, options: Options, formats: FormatsMode = 'full'): AjvInstance {
  const ajv =
    dialect === '2020-12' ? new Ajv2020(options) : dialect === '2019-09' ? new Ajv2019(options) : new Ajv(options);
  addFormats(ajv, { mode: formats });
  linearUniqueItems(ajv);
  hashedEnum(ajv);
  return ajv;
}

/** Members of an `enum` up to which ajv's own check (one comparison per member, inlined) is kept. */
const INLINE_ENUM_MEMBERS = 16;

/**
 * ajv checks `enum` by comparing the value with every member: items of a 4,000-member enum in a 1 MB array took
 * 7 s (strings) to 10 s (objects). A larger enum is checked by looking the value's canonical JSON up in a set.
 */
function hashedEnum(ajv: AjvInstance): void {
  const inline = ajv.getKeyword('enum');
  if (!inline || typeof inline !== 'object' || !('code' in inline) || inline.code === undefined) return;
  const inlineCode = inline.code;
  ajv.removeKeyword('enum');
  ajv.addKeyword({
    ...inline,
    code(cxt) {
      const members = cxt.schema as unknown;
      if (cxt.$data || !Array.isArray(members) || members.length <= INLINE_ENUM_MEMBERS) return inlineCode(cxt);
      const allowed = new Set(members.map(canonicalJson));
      const has = cxt.gen.scopeValue('keyword', { ref: (value: unknown) => allowed.has(canonicalJson(value)) });
      cxt.fail(_`!${has}(${cxt.data})`);
    },
  });
}

/**
 * ajv checks `uniqueItems` of items that are not typed as scalars by comparing every pair: a 149 KB body of
 * 20,000 small arrays held the event loop for 8 s (a 1 MB one, minutes). This one keys each item by its canonical
 * JSON (object members sorted), so the check is linear in the value's size.
 */
function linearUniqueItems(ajv: AjvInstance): void {
  ajv.removeKeyword('uniqueItems');
  ajv.addKeyword({
    keyword: 'uniqueItems',
    type: 'array',
    schemaType: 'boolean',
    errors: false,
    validate: (unique: boolean, data: unknown[]) => {
      if (!unique) return true;
      const seen = new Set<string>();
      for (const item of data) {
        const key = canonicalJson(item);
        if (seen.has(key)) return false;
        seen.add(key);
      }
      return true;
    },
  });
}

/** JSON with object members in sorted order: equal JSON values (as JSON Schema compares them) get equal strings. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    return `{${Object.keys(record)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(record[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** One instance per dialect only checks schemas against the meta-schema, which is costly to compile. */
const metaCheckers = new Map<Dialect, AjvInstance>();

function assertValidSchema(schema: JsonSchema, dialect: Dialect): void {
  let checker = metaCheckers.get(dialect);
  if (!checker) {
    checker = newAjv(dialect, { strict: false, logger: false });
    metaCheckers.set(dialect, checker);
  }
  if (!checker.validateSchema(schema)) throw new Error(`schema is invalid: ${checker.errorsText(checker.errors)}`);
}

/**
 * Compiles one schema into a validator; throws when the schema is not valid JSON Schema or does not compile.
 * Each schema gets its own (cheap) ajv instance so that two contracts using the same `$id`, or a contract
 * recompiled after a change, never meet in a shared registry of schemas.
 */
export function compileSchema(schema: JsonSchema, role: SchemaRole): ValidateFunction {
  const dialect = dialectOf(schema);
  assertValidSchema(schema, dialect);
  const { options, formats } = ROLES[role];
  const compile = (allErrors: boolean): ValidateFunction =>
    newAjv(dialect, { ...options, allErrors, validateSchema: false }, formats).compile(schema);
  const firstError = compile(false);
  // `$async: true` makes ajv return a promise: truthy (every value would pass) and rejected when invalid, an
  // unhandled rejection that stops the process. A contract's author must not get either.
  if ((firstError as { $async?: unknown }).$async === true) throw new Error('$async schemas are not supported');
  return listingErrorsOfSmallValues(firstError, compile);
}

/** Values (objects, arrays and scalars, at every depth) a failing value may have for all its errors to be listed. */
const ALL_ERRORS_MAX_VALUES = 10_000;

/**
 * Checks with `firstError` (stops at the first failure); when that fails and the value is small, checks again
 * listing every error (ajv's allErrors, compiled on first need). allErrors on a large value makes an error object
 * per bad item: one 800 KB body of 400,000 bad array items made 400,000 of them, and eight such requests at once
 * ran a 128 MB-heap gateway out of memory. A large failing value gets its first error only.
 */
function listingErrorsOfSmallValues(
  firstError: ValidateFunction,
  compile: (allErrors: boolean) => ValidateFunction,
): ValidateFunction {
  let allErrors: ValidateFunction | undefined;
  const validate = ((data: unknown): boolean => {
    if (firstError(data)) {
      validate.errors = null;
      return true;
    }
    if (valuesAtLeast(data, ALL_ERRORS_MAX_VALUES)) {
      validate.errors = firstError.errors;
      return false;
    }
    allErrors ??= compile(true);
    const ok = allErrors(data);
    validate.errors = allErrors.errors;
    return ok;
  }) as ValidateFunction;
  validate.schema = firstError.schema;
  validate.schemaEnv = firstError.schemaEnv;
  return validate;
}

/** Whether `data` holds at least `limit` values; walks iteratively and stops at the limit. */
function valuesAtLeast(data: unknown, limit: number): boolean {
  const stack: unknown[] = [data];
  let count = 0;
  while (stack.length > 0) {
    if (++count >= limit) return true;
    const value = stack.pop();
    if (value !== null && typeof value === 'object') for (const child of Object.values(value)) stack.push(child);
  }
  return false;
}
