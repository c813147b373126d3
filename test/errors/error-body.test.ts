import { expect } from 'chai';
import { ERROR_CODES, isKnownCode } from '../../plugin/errors/codes';
import { GatewayError, serviceUnavailable, badGateway, gatewayTimeout } from '../../plugin/errors/gateway-error';
import { fromServiceError, toErrorBody } from '../../plugin/errors/error-body';

describe('error body', () => {
  it('maps every code of the table to its status', () => {
    const expected: Record<string, number> = {
      NO_AUTH_HEADER: 401,
      INVALID_TOKEN: 401,
      TOKEN_EXPIRED: 401,
      INVALID_CREDENTIALS: 401,
      UNAUTHORIZED: 401,
      INSUFFICIENT_PERMISSIONS: 403,
      PERMISSION_DENIED: 403,
      POLICY_VIOLATION: 403,
      ACCESS_DENIED: 403,
      VALIDATION_ERROR: 400,
      MISSING_REQUIRED_FIELD: 400,
      INVALID_FORMAT: 400,
      INVALID_TYPE: 400,
      NOT_FOUND: 404,
      HANDLER_NOT_FOUND: 404,
      RESOURCE_CONFLICT: 409,
      RESOURCE_DELETED: 410,
      RATE_LIMIT_EXCEEDED: 429,
      INTERNAL_ERROR: 500,
      SERVICE_UNAVAILABLE: 503,
      TIMEOUT: 504,
    };
    for (const [code, status] of Object.entries(expected))
      expect(isKnownCode(code) ? ERROR_CODES[code].status : undefined, code).to.equal(status);
  });

  it('builds the error body with extras, correlationId and timestamp', () => {
    const err = new GatewayError('NOT_FOUND', 'User u1 does not exist', {
      extra: { resourceType: 'User', resourceId: 'u1' },
    });
    const { status, body } = toErrorBody(err, 'corr-1');
    expect(status).to.equal(404);
    expect(body).to.include({
      error: 'Not Found',
      code: 'NOT_FOUND',
      message: 'User u1 does not exist',
      resourceType: 'User',
      resourceId: 'u1',
      correlationId: 'corr-1',
    });
    expect(new Date(body.timestamp).toISOString()).to.equal(body.timestamp);
  });

  it('never lets an unexpected error reach the client', () => {
    const err = new TypeError(
      "Cannot read properties of undefined (reading 'x') at /srv/app/node_modules/pg/lib/client.js:12",
    );
    const { status, body } = toErrorBody(err, 'c');
    expect(status).to.equal(500);
    expect(body.code).to.equal('INTERNAL_ERROR');
    expect(JSON.stringify(body)).not.to.match(/node_modules|TypeError|reading|\/srv/);
  });

  it('gives 503 with Retry-After, 502 with service, 504 with timeoutMs', () => {
    const u = toErrorBody(serviceUnavailable('down', 7));
    expect(u.status).to.equal(503);
    expect(u.headers['Retry-After']).to.equal('7');
    expect(u.body).to.include({ code: 'SERVICE_UNAVAILABLE', retryAfter: 7, error: 'Service Unavailable' });
    const b = toErrorBody(badGateway('users-service'));
    expect(b.status).to.equal(502);
    expect(b.body).to.include({ code: 'SERVICE_UNAVAILABLE', service: 'users-service', error: 'Bad Gateway' });
    const t = toErrorBody(gatewayTimeout(30000));
    expect(t.status).to.equal(504);
    expect(t.body).to.include({ code: 'TIMEOUT', timeoutMs: 30000, error: 'Gateway Timeout' });
  });

  it('does not let extras overwrite the fields the gateway owns', () => {
    const { body } = toErrorBody(
      new GatewayError('NOT_FOUND', 'm', { extra: { code: 'X', correlationId: 'forged' } }),
      'real',
    );
    expect(body.code).to.equal('NOT_FOUND');
    expect(body.correlationId).to.equal('real');
  });
});

describe('service errors', () => {
  it('passes a known 4xx code with its fields and message', () => {
    const e = fromServiceError({ code: 'RESOURCE_CONFLICT', message: 'dup', conflictingField: 'email' });
    expect(e.status).to.equal(409);
    expect(toErrorBody(e).body).to.include({ code: 'RESOURCE_CONFLICT', message: 'dup', conflictingField: 'email' });
  });

  it('lets a service choose 422 for VALIDATION_ERROR but not an arbitrary status', () => {
    expect(fromServiceError({ code: 'VALIDATION_ERROR', status: 422 }).status).to.equal(422);
    expect(fromServiceError({ code: 'NOT_FOUND', status: 200 }).status).to.equal(404);
  });

  it('replaces unknown codes and 5xx messages', () => {
    const unknown = fromServiceError({ code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 10.0.0.5:5432' });
    expect(unknown.code).to.equal('INTERNAL_ERROR');
    expect(unknown.message).not.to.contain('5432');
    const internal = fromServiceError({ code: 'INTERNAL_ERROR', message: 'relation "users" does not exist' });
    expect(internal.message).not.to.contain('relation');
    expect(fromServiceError(null).code).to.equal('INTERNAL_ERROR');
  });
});

describe('service errors with a retry time', () => {
  it('turns retryAfter of a 429 into the Retry-After header', () => {
    const { status, body, headers } = toErrorBody(
      fromServiceError({ code: 'RATE_LIMIT_EXCEEDED', message: 'slow down', retryAfter: 60 }),
    );
    expect(status).to.equal(429);
    expect(body).to.include({ retryAfter: 60 });
    expect(headers['Retry-After']).to.equal('60');
  });

  it('answers a service 503 with Retry-After and ignores a nonsensical retryAfter', () => {
    const ok = toErrorBody(
      fromServiceError({ code: 'SERVICE_UNAVAILABLE', status: 503, retryAfter: 9, message: 'pool exhausted at db-3' }),
    );
    expect(ok.status).to.equal(503);
    expect(ok.headers['Retry-After']).to.equal('9');
    expect(ok.body.message).not.to.contain('db-3');
    const odd = toErrorBody(fromServiceError({ code: 'RATE_LIMIT_EXCEEDED', retryAfter: 'soon' }));
    expect(odd.headers).not.to.have.property('Retry-After');
  });

  it("holds a reply's retryAfter to 1..86400 seconds in the body and the Retry-After header alike", () => {
    const cases: Array<[unknown, number | undefined]> = [
      [1e300, 86400],
      [86401, 86400],
      [-5, 1],
      [0, 1],
      [0.2, 1],
      [2.5, 3],
      [60, 60],
      ['soon', undefined],
      [null, undefined],
      [{ n: 1 }, undefined],
    ];
    for (const [given, held] of cases) {
      const { body, headers } = toErrorBody(
        fromServiceError({ code: 'RATE_LIMIT_EXCEEDED', message: 'slow down', retryAfter: given }),
      );
      expect(body.retryAfter, String(given)).to.equal(held);
      expect(headers['Retry-After'], String(given)).to.equal(held === undefined ? undefined : String(held));
    }
    const unavailable = toErrorBody(fromServiceError({ code: 'SERVICE_UNAVAILABLE', status: 503, retryAfter: -1e300 }));
    expect(unavailable.body.retryAfter).to.equal(1);
    expect(unavailable.headers['Retry-After']).to.equal('1');
  });

  it("answers a service 502 with the replying service and no retry time, as the gateway's own 502", () => {
    const bad = toErrorBody(
      fromServiceError(
        { code: 'SERVICE_UNAVAILABLE', status: 502, retryAfter: 9, message: 'db-3 down' },
        'orders-service',
      ),
    );
    expect(bad.status).to.equal(502);
    expect(bad.body).to.include({ code: 'SERVICE_UNAVAILABLE', service: 'orders-service' });
    expect(bad.body).not.to.have.property('retryAfter');
    expect(bad.headers).not.to.have.property('Retry-After');
    expect(bad.body.message).not.to.contain('db-3');
  });
});
