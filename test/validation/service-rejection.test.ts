import { expect } from 'chai';
import { fromServiceError, toErrorBody } from '../../plugin/errors/error-body';

describe('validation: a service’s business-rule rejection', () => {
  it('passes 422 VALIDATION_ERROR through with its validationErrors', () => {
    const validationErrors = [{ field: 'startDate', message: 'must be before endDate' }];
    const err = fromServiceError({
      code: 'VALIDATION_ERROR',
      message: 'Booking rules violated',
      status: 422,
      validationErrors,
    });
    const { status, body } = toErrorBody(err, 'c-422');
    expect(status).to.equal(422);
    expect(body).to.include({
      code: 'VALIDATION_ERROR',
      error: 'Validation failed',
      message: 'Booking rules violated',
      correlationId: 'c-422',
    });
    expect(body.validationErrors).to.deep.equal(validationErrors);
  });

  it('keeps 400 for VALIDATION_ERROR without a status, and refuses a status the code does not have', () => {
    expect(toErrorBody(fromServiceError({ code: 'VALIDATION_ERROR', message: 'x' })).status).to.equal(400);
    expect(toErrorBody(fromServiceError({ code: 'VALIDATION_ERROR', message: 'x', status: 418 })).status).to.equal(400);
  });
});
