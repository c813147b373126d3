import '../auth/support';
import { expect } from 'chai';
import type { Request, Response } from 'express';
import { andThen, attempt, settle, type Maybe } from '../../plugin/pipeline/maybe';
import { jwtDevAuthPolicy } from '../../policies/jwt-dev-auth';
import { permissionPolicy } from '../../policies/permission';
import { requestUser } from '../../plugin/pipeline/user';
import { testRuntime } from '../support/runtime';
import { SECRET, claims, fakeReq, hs256, isolateAuthEnv, run } from '../auth/support';

/** The policies' runtime (verifiers, log); its bus is never started: these routes name no contract. */
const runtime = testRuntime();
after(() => runtime.close());

/** Outcome of settle(): what was called, and whether it was called before settle() returned. */
function settleNow<T>(work: () => Maybe<T>): { outcome: Promise<{ done?: T; failed?: unknown }>; syncResult: string } {
  let syncResult = 'pending';
  const outcome = new Promise<{ done?: T; failed?: unknown }>((resolve) => {
    settle(
      work,
      (v) => {
        syncResult = syncResult === 'pending' ? 'done' : syncResult;
        resolve({ done: v });
      },
      (err) => {
        syncResult = syncResult === 'pending' ? 'failed' : syncResult;
        resolve({ failed: err });
      },
    );
  });
  const seen = syncResult;
  syncResult = 'returned';
  return { outcome, syncResult: seen };
}

describe('maybe: steps that run synchronously when nothing has to be waited for', () => {
  it('andThen applies at once to a value and after settling to a promise', async () => {
    expect(andThen(2, (v) => v * 3)).to.equal(6);
    const later = andThen(Promise.resolve(2), (v) => v * 3);
    expect(later).to.be.instanceOf(Promise);
    expect(await later).to.equal(6);
    expect(() => andThen(2, () => {
      throw new Error('now');
    })).to.throw('now');
  });

  it('attempt falls back when the work throws or rejects, at once or later, and lets what `then` throws through', async () => {
    const twice = (v: number) => v * 2;
    const fallback = (err: unknown) => (err instanceof Error && err.message === 'now' ? -2 : -3);
    expect(attempt(() => 4, twice, () => -1)).to.equal(8);
    expect(attempt((): number => {
      throw new Error('now');
    }, twice, fallback)).to.equal(-2);
    const later = attempt(() => Promise.resolve(4), twice, () => -1);
    expect(later).to.be.instanceOf(Promise);
    expect(await later).to.equal(8);
    expect(await attempt((): Promise<number> => Promise.reject(new Error('later')), twice, fallback)).to.equal(-3);
    const thenFails = () => {
      throw new Error('in then');
    };
    expect(() => attempt(() => 4, thenFails, () => -1)).to.throw('in then');
    let rejected: unknown;
    await (attempt(() => Promise.resolve(4), thenFails, () => -1) as Promise<unknown>).catch((err: unknown) => (rejected = err));
    expect((rejected as Error).message).to.equal('in then');
  });

  it('settle calls done before returning when the work has its value at hand', async () => {
    const r = settleNow(() => 5);
    expect(r.syncResult).to.equal('done');
    expect(await r.outcome).to.deep.equal({ done: 5 });
  });

  it('settle waits for a promise, and a rejection goes to fail', async () => {
    const ok = settleNow(() => Promise.resolve('later'));
    expect(ok.syncResult).to.equal('pending');
    expect(await ok.outcome).to.deep.equal({ done: 'later' });
    const bad = new Error('rejected');
    const ko = settleNow(() => Promise.reject(bad));
    expect(ko.syncResult).to.equal('pending');
    expect((await ko.outcome).failed).to.equal(bad);
  });

  it('settle sends what the work or done throws to fail, on both paths, and never calls done after it', async () => {
    const thrown = new Error('thrown');
    const r1 = settleNow(() => {
      throw thrown;
    });
    expect(r1.syncResult).to.equal('failed');
    expect((await r1.outcome).failed).to.equal(thrown);

    for (const work of [() => 1, () => Promise.resolve(1)]) {
      const calls: string[] = [];
      await new Promise<void>((resolve) => {
        settle(
          work,
          () => {
            calls.push('done');
            throw thrown;
          },
          (err) => {
            calls.push(err === thrown ? 'fail' : 'other');
            resolve();
          },
        );
      });
      expect(calls).to.deep.equal(['done', 'fail']);
    }
  });
});

describe('maybe: arguments passed on to the callbacks (module-level callbacks, no closure per request)', () => {
  const sum = (v: number, a: number, b: number, c: number) => v + a * 10 + b * 100 + c * 1000;

  it('andThen passes a, b and c to f, at once and after settling', async () => {
    expect(andThen(1, sum, 2, 3, 4)).to.equal(4321);
    expect(await andThen(Promise.resolve(1), sum, 2, 3, 4)).to.equal(4321);
  });

  it('attempt passes them to the work, to then and to otherwise, on both paths', async () => {
    // Weighted, so that arguments passed in the wrong order give another number.
    const work = (a: number, b: number, c: number) => a + b * 10 + c * 100;
    const fallback = (err: unknown, a: number, b: number, c: number) => (err instanceof Error ? -(a + b * 10 + c * 100) : 0);
    expect(attempt(work, sum, fallback, 1, 2, 3)).to.equal(321 + 3210);
    expect(await attempt((a: number, b: number, c: number) => Promise.resolve(work(a, b, c)), sum, fallback, 1, 2, 3)).to.equal(321 + 3210);
    const throws = (): number => {
      throw new Error('now');
    };
    expect(attempt(throws, sum, fallback, 1, 2, 3)).to.equal(-321);
    expect(await attempt((): Promise<number> => Promise.reject(new Error('later')), sum, fallback, 1, 2, 3)).to.equal(-321);
  });

  it('settle passes them to work, done and fail, on both paths', async () => {
    const both = [(a: string, b: number, c: boolean) => [a, b, c], (a: string, b: number, c: boolean) => Promise.resolve([a, b, c])];
    for (const work of both) {
      const seen = await new Promise<unknown[]>((resolve) => settle(work, (v, a, b, c) => resolve([v, a, b, c]), (err) => resolve([err]), 'x', 2, true));
      expect(seen).to.deep.equal([['x', 2, true], 'x', 2, true]);
    }
    const bad = new Error('bad');
    const failing = [(_a: string, _b: number, _c: boolean): string => {
      throw bad;
    }, (_a: string, _b: number, _c: boolean): Promise<string> => Promise.reject(bad)];
    for (const work of failing) {
      const seen = await new Promise<unknown[]>((resolve) => settle(work, () => resolve(['done']), (err, a, b, c) => resolve([err, a, b, c]), 'x', 2, true));
      expect(seen).to.deep.equal([bad, 'x', 2, true]);
    }
  });
});

describe('maybe: policies on the fast path', () => {
  isolateAuthEnv();
  beforeEach(() => runtime.verifiers.clear());

  const quietRes = (): Response => ({ setHeader: () => undefined, getHeader: () => undefined, headersSent: false }) as unknown as Response;

  it('jwt-dev-auth and permission call next() before they return once the token is in the cache', async () => {
    const token = hs256(claims({ permissions: ['things:read'] }));
    const auth = jwtDevAuthPolicy(runtime).policy({ jwtSecret: SECRET });
    const permission = permissionPolicy(runtime).policy({ required: ['things:read'] });

    // First use: the signature is verified (jose is asynchronous), so the step answers later.
    const first = fakeReq({ authorization: `Bearer ${token}` });
    let nextNow = false;
    const outcome = run((req, res, next) => {
      auth(req, res, () => {
        nextNow = true;
        next();
      });
      expect(nextNow).to.equal(false);
    }, first);
    expect((await outcome).next).to.equal(true);
    expect(requestUser(first)?.userId).to.equal('user-1');

    // The same token again: verified already, so both steps go on synchronously.
    const second = fakeReq({ authorization: `Bearer ${token}` });
    const order: string[] = [];
    auth(second as Request, quietRes(), () => {
      order.push('auth');
      permission(second as Request, quietRes(), () => order.push('permission'));
    });
    order.push('returned');
    expect(order).to.deep.equal(['auth', 'permission', 'returned']);
    expect(requestUser(second)?.permissions).to.deep.equal(['things:read']);
  });

  it('the fast path answers as the slow one: a missing permission is 403 with the error body', async () => {
    const token = hs256(claims({ permissions: ['other'] }));
    const auth = jwtDevAuthPolicy(runtime).policy({ jwtSecret: SECRET });
    const permission = permissionPolicy(runtime).policy({ required: ['things:read'] });
    const req = fakeReq({ authorization: `Bearer ${token}` });
    await run(auth, req);
    const out = await run(permission, req);
    expect(out.next).to.equal(false);
    expect(out.status).to.equal(403);
    expect(out.body).to.include({ code: 'INSUFFICIENT_PERMISSIONS', requiredPermission: 'things:read' });
  });
});
