import { expect } from 'chai';
import type { Request } from 'express';
import { GatewayError } from '../../plugin/errors/gateway-error';
import { idempotencyKeyOf, parseIdempotencyKey, takesIdempotencyKey } from '../../plugin/pipeline/idempotency-key';

function request(method: string, key?: string): Request {
  return { method, headers: key === undefined ? {} : { 'idempotency-key': key } } as unknown as Request;
}

describe('Idempotency-Key header (gateway side)', () => {
  it('accepts 1-255 visible ASCII characters, bare or as a quoted structured-field string', () => {
    expect(parseIdempotencyKey('8e03978e-40d5-43e8-bc93-6894a57f9324')).to.equal(
      '8e03978e-40d5-43e8-bc93-6894a57f9324',
    );
    expect(parseIdempotencyKey('"8e03978e-40d5"')).to.equal('8e03978e-40d5');
    expect(parseIdempotencyKey('"a b \\"c\\" \\\\"')).to.equal('a b "c" \\');
    expect(parseIdempotencyKey('x')).to.equal('x');
    expect(parseIdempotencyKey('k'.repeat(255))).to.equal('k'.repeat(255));
    expect(parseIdempotencyKey(`"${'k'.repeat(255)}"`)).to.equal('k'.repeat(255));
  });

  it('refuses the empty key, an over-long one, spaces or controls in the bare form, non-ASCII and broken quoting', () => {
    for (const bad of [
      '',
      '""',
      'k'.repeat(256),
      `"${'k'.repeat(256)}"`,
      'a b',
      'a\tb',
      'clé',
      '"abc',
      '"a"b"',
      '"a\\b"',
      '"a\u0001"',
    ]) {
      expect(parseIdempotencyKey(bad), JSON.stringify(bad)).to.equal(undefined);
    }
  });

  it('commands (any method) and every POST take a key; a GET query does not', () => {
    expect(takesIdempotencyKey('POST', 'CreateUserCommand')).to.equal(true);
    expect(takesIdempotencyKey('DELETE', 'DeleteUserCommand')).to.equal(true);
    expect(takesIdempotencyKey('POST', 'SearchUsersQuery')).to.equal(true);
    expect(takesIdempotencyKey('GET', 'GetUserQuery')).to.equal(false);
  });

  it('a malformed key is a 400 VALIDATION_ERROR naming the header; none, or one on a GET query, is no key', () => {
    let caught: unknown;
    try {
      idempotencyKeyOf(request('POST', 'has space'), 'CreateUserCommand');
    } catch (err) {
      caught = err;
    }
    expect(caught).to.be.instanceOf(GatewayError);
    const e = caught as GatewayError;
    expect(e.status).to.equal(400);
    expect(e.code).to.equal('VALIDATION_ERROR');
    expect(e.details).to.have.property('Idempotency-Key');
    expect(idempotencyKeyOf(request('POST'), 'CreateUserCommand')).to.equal(undefined);
    expect(idempotencyKeyOf(request('GET', 'has space'), 'GetUserQuery')).to.equal(undefined);
    expect(idempotencyKeyOf(request('POST', '"k-1"'), 'CreateUserCommand')).to.equal('k-1');
  });
});
