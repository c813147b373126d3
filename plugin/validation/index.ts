export { compileSchema, dialectOf, type SchemaRole } from './ajv';
export { ValidatorCache, compileInline, tryCompile, type Compiled } from './validator-cache';
export { toFieldErrors, codeFor, fieldPath, inputValidationError, type FieldError } from './field-errors';
export { stripWriteOnly } from './write-only';
export { checkOutput, responseJson, type OutputContext } from './output';
