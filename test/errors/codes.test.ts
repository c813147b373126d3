import { expect } from 'chai';
import { ERROR_CODES, codeInfo, isKnownCode, type ErrorCode } from '../../plugin/errors/codes';
import { GatewayError } from '../../plugin/errors/gateway-error';
import { ServiceError } from '../../sdk';

describe('error codes', () => {
  it('does not compile a misspelt code where a code is taken', () => {
    // Checked by tsc (`npm run build`): an @ts-expect-error whose next line compiles is itself an error.
    // Never called: the lines only have to fail to compile.
    const misspelt = (): unknown[] => [
      // @ts-expect-error 'MISSPELT' is not a code of plugin/errors/codes.ts
      new GatewayError('MISSPELT', 'never built'),
      // @ts-expect-error a service answers with a code of the table too
      new ServiceError('NOT_FOUNDD', 'never built'),
      // @ts-expect-error
      codeInfo('TIME_OUT'),
    ];
    // @ts-expect-error the code type is the keys of the table, not any string
    const code: ErrorCode = 'MISSPELT';
    expect(misspelt).to.be.a('function');
    expect(isKnownCode(code), 'a misspelt code arriving from a service').to.equal(false);
  });

  it('knows exactly the codes of the table', () => {
    for (const code of Object.keys(ERROR_CODES)) expect(isKnownCode(code), code).to.equal(true);
    for (const other of ['', 'not_found', 'toString', '__proto__', 404, null])
      expect(isKnownCode(other), String(other)).to.equal(false);
  });

  it('keeps the code a service error was given on its reply', () => {
    const reply = new ServiceError('RESOURCE_CONFLICT', 'taken', { conflictingField: 'email' }).toReply();
    expect(reply).to.deep.equal({
      ok: false,
      error: { conflictingField: 'email', code: 'RESOURCE_CONFLICT', message: 'taken' },
    });
  });
});
