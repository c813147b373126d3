import '../auth/support';
import { expect } from 'chai';
import type { Request, Response } from 'express';
import { runner, type Step } from '../../plugin/lifecycle/runner';
import { jwtDevAuthPolicy } from '../../policies/jwt-dev-auth';
import { permissionPolicy } from '../../policies/permission';
import { requestContext, type RequestContext } from '../../plugin/request/context';
import { quiet, testRuntime } from '../support/runtime';
import { SECRET, claims, envWithoutAuth, fakeReq, hs256, isolateAuthEnv, run } from '../auth/support';

/** A step that records its name, then returns what `result` gives (nothing, a promise) or throws it. */
function step(
  name: string,
  seen: string[],
  result: () => void | Promise<void> = () => undefined,
  failed: Step['failed'] = () => seen.push(`${name} failed`),
): Step {
  return {
    run: () => {
      seen.push(name);
      return result();
    },
    failed,
  };
}

/** What the runner did: the order of the steps, next and failures, and whether next came before the call returned. */
function runNow(
  steps: Step[],
  res: Partial<Response> = { headersSent: false, setHeader: () => undefined as never, getHeader: () => undefined },
): { seen: string[]; done: Promise<void> } {
  const seen: string[] = [];
  let finish = (): void => undefined;
  const done = new Promise<void>((resolve) => (finish = resolve));
  const built = steps.map((s) => ({
    run: (req: Request, r: Response, ctx: RequestContext) => s.run(req, r, ctx, undefined),
    failed: (err: unknown, req: Request, r: Response) => {
      s.failed(err, req, r);
      seen.push('failed');
      finish();
    },
  }));
  runner(built)(fakeReq(), res as Response, () => {
    seen.push('next');
    finish();
  });
  seen.push('returned');
  return { seen, done };
}

describe('runner: steps in order, waiting only for a promise', () => {
  it('runs steps that return nothing and calls next() before it returns', () => {
    const seen: string[] = [];
    const { seen: order } = runNow([step('a', seen), step('b', seen)]);
    expect(seen).to.deep.equal(['a', 'b']);
    expect(order).to.deep.equal(['next', 'returned']);
  });

  it("waits for a step's promise, then goes on with the next step", async () => {
    const seen: string[] = [];
    let release = (): void => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const r = runNow([step('a', seen), step('b', seen, () => gate), step('c', seen)]);
    expect(seen).to.deep.equal(['a', 'b']);
    expect(r.seen).to.deep.equal(['returned']);
    release();
    await r.done;
    expect(seen).to.deep.equal(['a', 'b', 'c']);
    expect(r.seen).to.deep.equal(['returned', 'next']);
  });

  it("sends what a step throws, or its promise rejects with, to that step's failed, and runs nothing after it", async () => {
    const thrown = new Error('thrown');
    for (const result of [
      (): void => {
        throw thrown;
      },
      (): Promise<void> => Promise.reject(thrown),
    ]) {
      const seen: string[] = [];
      let got: unknown;
      const r = runNow([step('a', seen), step('b', seen, result, (err) => (got = err)), step('c', seen)]);
      await r.done;
      expect(got).to.equal(thrown);
      expect(seen).to.deep.equal(['a', 'b']);
      expect(r.seen).to.not.include('next');
      expect(r.seen).to.include('failed');
    }
  });

  it('stops after a step that answered the request, at once or once its promise settles', async () => {
    for (const wait of [false, true]) {
      const seen: string[] = [];
      const res = { headersSent: false, setHeader: () => undefined as never, getHeader: () => undefined };
      const answer = (): void | Promise<void> => {
        res.headersSent = true;
        return wait ? Promise.resolve() : undefined;
      };
      const r = runNow([step('a', seen, answer), step('b', seen)], res as Partial<Response>);
      await new Promise((resolve) => setImmediate(resolve));
      expect(seen).to.deep.equal(['a']);
      expect(r.seen).to.deep.equal(['returned']);
    }
  });

  it('cuts the connection, and leaves no unhandled rejection, when a failure answer throws on the promise path', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      let destroyed = false;
      const res = {
        headersSent: false,
        setHeader: () => undefined,
        getHeader: () => undefined,
        destroy: () => void (destroyed = true),
      };
      const broken: Step = {
        run: () => Promise.reject(new Error('bus down')),
        failed: () => {
          throw new Error('could not answer');
        },
      };
      runner([broken])(fakeReq(), res as unknown as Response, () => expect.fail('next must not run'));
      await new Promise((r) => setImmediate(r));
      await new Promise((r) => setImmediate(r));
      expect(destroyed).to.equal(true);
      expect(unhandled).to.deep.equal([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('sets the trace headers before the first step runs', () => {
    const headers: Record<string, unknown> = {};
    const res = {
      headersSent: false,
      setHeader: (name: string, value: unknown) => (headers[name.toLowerCase()] = value),
      getHeader: (name: string) => headers[name.toLowerCase()],
    };
    let atFirstStep: unknown;
    runNow(
      [{ run: () => void (atFirstStep = headers['x-correlation-id']), failed: () => undefined }],
      res as unknown as Partial<Response>,
    );
    expect(atFirstStep).to.be.a('string');
  });
});

describe('runner: policies on the fast path', () => {
  isolateAuthEnv();
  /** The policies' runtime (verifiers, log); its bus is never started: these routes name no contract. */
  const runtime = testRuntime({}, quiet, envWithoutAuth());
  after(() => runtime.close());
  beforeEach(() => runtime.services.verifiers.clear());

  const quietRes = (): Response =>
    ({ setHeader: () => undefined, getHeader: () => undefined, headersSent: false }) as unknown as Response;

  it('jwt-dev-auth and permission call next() before they return once the token is in the cache', async () => {
    const token = hs256(claims({ permissions: ['things:read'] }));
    const auth = jwtDevAuthPolicy(runtime.services).policy({ jwtSecret: SECRET });
    const permission = permissionPolicy(runtime.services).policy({ required: ['things:read'] });

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
    expect(requestContext(first).caller?.userId).to.equal('user-1');

    // The same token again: verified already, so both steps go on synchronously.
    const second = fakeReq({ authorization: `Bearer ${token}` });
    const order: string[] = [];
    auth(second as Request, quietRes(), () => {
      order.push('auth');
      permission(second as Request, quietRes(), () => order.push('permission'));
    });
    order.push('returned');
    expect(order).to.deep.equal(['auth', 'permission', 'returned']);
    expect(requestContext(second).caller?.permissions).to.deep.equal(['things:read']);
  });

  it('the fast path answers as the slow one: a missing permission is 403 with the error body', async () => {
    const token = hs256(claims({ permissions: ['other'] }));
    const auth = jwtDevAuthPolicy(runtime.services).policy({ jwtSecret: SECRET });
    const permission = permissionPolicy(runtime.services).policy({ required: ['things:read'] });
    const req = fakeReq({ authorization: `Bearer ${token}` });
    await run(auth, req);
    const out = await run(permission, req);
    expect(out.next).to.equal(false);
    expect(out.status).to.equal(403);
    expect(out.body).to.include({ code: 'INSUFFICIENT_PERMISSIONS', requiredPermission: 'things:read' });
  });
});
