import { expect } from 'chai';
import {
  boundedConcurrency,
  DEFAULT_MAX_CONCURRENT_PASSWORD_CHECKS,
  passwordCheckBoundFromEnv,
} from '../../examples/auth-service/password-checks';
import { ServiceError } from '../../sdk';

/** A handler whose calls finish only when the test says so. */
function heldHandler() {
  const pending: Array<{ finish(): void; fail(): void }> = [];
  let calls = 0;
  const handle = (input: string, _ctx: unknown): Promise<string> =>
    new Promise<string>((resolve, reject) => {
      calls += 1;
      pending.push({ finish: () => resolve(`done ${input}`), fail: () => reject(new Error('boom')) });
    });
  return { handle, pending, calls: () => calls };
}

describe("the auth service's bound on password checks at once", () => {
  it('refuses a call beyond the bound at once with 503 and retryAfter, without running it', async () => {
    const held = heldHandler();
    const bounded = boundedConcurrency(2, held.handle);
    const first = bounded('a', {});
    const second = bounded('b', {});
    const refused = await bounded('c', {}).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(refused).to.be.instanceOf(ServiceError);
    expect((refused as ServiceError).toReplyError()).to.deep.equal({
      code: 'SERVICE_UNAVAILABLE',
      message: 'Too many logins at once; try again shortly',
      status: 503,
      retryAfter: 1,
    });
    expect(held.calls()).to.equal(2);
    held.pending[0]!.finish();
    held.pending[1]!.finish();
    expect(await Promise.all([first, second])).to.deep.equal(['done a', 'done b']);
  });

  it('gives the slot back when a call ends, also when it fails', async () => {
    const held = heldHandler();
    const bounded = boundedConcurrency(1, held.handle);
    const failing = bounded('a', {}).catch((err: Error) => err.message);
    held.pending[0]!.fail();
    expect(await failing).to.equal('boom');
    const next = bounded('b', {});
    expect(held.calls()).to.equal(2);
    held.pending[1]!.finish();
    expect(await next).to.equal('done b');
  });

  it('is MAX_CONCURRENT_PASSWORD_CHECKS, 4 when unset, and a bad value stops the start', () => {
    expect(passwordCheckBoundFromEnv({})).to.equal(DEFAULT_MAX_CONCURRENT_PASSWORD_CHECKS).and.to.equal(4);
    expect(passwordCheckBoundFromEnv({ MAX_CONCURRENT_PASSWORD_CHECKS: ' 16 ' })).to.equal(16);
    for (const bad of ['0', '-1', '2.5', 'four', '1001', 'off'])
      expect(() => passwordCheckBoundFromEnv({ MAX_CONCURRENT_PASSWORD_CHECKS: bad }), bad).to.throw(
        /MAX_CONCURRENT_PASSWORD_CHECKS must be a whole number from 1 to 1000/,
      );
  });
});
