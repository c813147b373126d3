import { expect } from 'chai';
import type { ErrorObject } from 'ajv';
import { compileSchema } from '../../plugin/validation/ajv';
import {
  codeFor,
  fieldPath,
  inputValidationError,
  toFieldErrors,
  MAX_REPORTED_ERRORS,
} from '../../plugin/validation/field-errors';
import { toErrorBody } from '../../plugin/errors/error-body';

/** The ajv errors of `data` against `schema`, compiled as the gateway compiles input schemas. */
function errorsOf(schema: Record<string, unknown>, data: unknown): ErrorObject[] {
  const validate = compileSchema(schema, 'input');
  expect(validate(data), 'expected the data to be invalid').to.equal(false);
  return validate.errors ?? [];
}

const userSchema = {
  type: 'object',
  properties: {
    email: { type: 'string', format: 'email' },
    password: { type: 'string', minLength: 8 },
    age: { type: 'integer', minimum: 0 },
    role: { enum: ['user', 'admin'] },
    profile: { type: 'object', properties: { firstName: { type: 'string', minLength: 1 } }, required: ['firstName'] },
    tags: { type: 'array', items: { type: 'string' } },
  },
  required: ['email'],
};

describe('validation: ajv errors → field, message, code', () => {
  it('names nested fields with dots and unescapes JSON Pointer', () => {
    expect(fieldPath('/profile/firstName')).to.equal('profile.firstName');
    expect(fieldPath('/a~1b/c~0d')).to.equal('a/b.c~d');
    expect(fieldPath('', 'email')).to.equal('email');
    expect(fieldPath('/profile', 'firstName')).to.equal('profile.firstName');
    expect(fieldPath('')).to.equal('input');
  });

  it('a single missing required field → MISSING_REQUIRED_FIELD, naming the field itself', () => {
    const errors = toFieldErrors(errorsOf(userSchema, {}));
    expect(errors).to.deep.equal([{ field: 'email', message: 'is required', keyword: 'required' }]);
    expect(codeFor(errors)).to.equal('MISSING_REQUIRED_FIELD');
    const nested = toFieldErrors(errorsOf(userSchema, { email: 'a@b.co', profile: {} }));
    expect(nested.map((e) => e.field)).to.deep.equal(['profile.firstName']);
  });

  it('a single wrong type → INVALID_TYPE; a single bad format → INVALID_FORMAT', () => {
    const type = toFieldErrors(errorsOf(userSchema, { email: 'a@b.co', age: 'old' }));
    expect(type).to.deep.equal([{ field: 'age', message: 'must be an integer', keyword: 'type' }]);
    expect(codeFor(type)).to.equal('INVALID_TYPE');
    const format = toFieldErrors(errorsOf(userSchema, { email: 'not-an-email' }));
    expect(format).to.deep.equal([{ field: 'email', message: 'must be a valid email address', keyword: 'format' }]);
    expect(codeFor(format)).to.equal('INVALID_FORMAT');
  });

  it('several failures, or another kind of failure → VALIDATION_ERROR', () => {
    const several = toFieldErrors(
      errorsOf(userSchema, { email: 'a@b.co', password: 'short', profile: { firstName: '' } }),
    );
    expect(several).to.deep.equal([
      { field: 'password', message: 'must be at least 8 characters long', keyword: 'minLength' },
      { field: 'profile.firstName', message: 'must not be empty', keyword: 'minLength' },
    ]);
    expect(codeFor(several)).to.equal('VALIDATION_ERROR');
    const range = toFieldErrors(errorsOf(userSchema, { email: 'a@b.co', age: -1 }));
    expect(range[0]).to.include({ field: 'age', message: 'must be greater than or equal to 0' });
    expect(codeFor(range)).to.equal('VALIDATION_ERROR');
    expect(toFieldErrors(errorsOf(userSchema, { email: 'a@b.co', role: 'root' }))[0]!.message).to.equal(
      'must be one of: user, admin',
    );
    expect(toFieldErrors(errorsOf(userSchema, { email: 'a@b.co', tags: ['a', 2] }))[0]!.field).to.equal('tags.1');
  });

  it('names each field additionalProperties: false refuses', () => {
    const errors = toFieldErrors(
      errorsOf(
        { type: 'object', properties: { a: { type: 'string' } }, additionalProperties: false },
        { a: 'x', b: 1, c: 2 },
      ),
    );
    expect(errors).to.deep.equal([
      { field: 'b', message: 'is not allowed', keyword: 'additionalProperties' },
      { field: 'c', message: 'is not allowed', keyword: 'additionalProperties' },
    ]);
  });

  it('reports a failed anyOf once instead of every branch', () => {
    const schema = {
      type: 'object',
      properties: {
        contact: {
          anyOf: [
            { type: 'string', format: 'email' },
            { type: 'object', required: ['phone'] },
          ],
        },
      },
    };
    expect(toFieldErrors(errorsOf(schema, { contact: 5 }))).to.deep.equal([
      { field: 'contact', message: 'must match one of the allowed forms', keyword: 'anyOf' },
    ]);
  });

  it(`reports at most ${MAX_REPORTED_ERRORS} errors`, () => {
    const schema = { type: 'object', properties: { items: { type: 'array', items: { type: 'integer' } } } };
    const errors = toFieldErrors(errorsOf(schema, { items: Array.from({ length: 500 }, () => 'x') }));
    expect(errors).to.have.length(MAX_REPORTED_ERRORS);
  });

  it('builds the error body: 400, details field → message, validationErrors [{ field, message }]', () => {
    const err = inputValidationError(
      errorsOf(userSchema, { email: 'a@b.co', password: 'short', profile: { firstName: '' } }),
    );
    const { status, body } = toErrorBody(err, 'corr-7');
    expect(status).to.equal(400);
    expect(body).to.include({ code: 'VALIDATION_ERROR', error: 'Validation failed', correlationId: 'corr-7' });
    expect(body.details).to.deep.equal({
      password: 'must be at least 8 characters long',
      'profile.firstName': 'must not be empty',
    });
    expect(body.validationErrors).to.deep.equal([
      { field: 'password', message: 'must be at least 8 characters long' },
      { field: 'profile.firstName', message: 'must not be empty' },
    ]);
    const single = toErrorBody(inputValidationError(errorsOf(userSchema, {})));
    expect(single.body).to.include({ code: 'MISSING_REQUIRED_FIELD', message: 'email is required' });
    expect(single.body.validationErrors).to.deep.equal([{ field: 'email', message: 'is required' }]);
  });
});
