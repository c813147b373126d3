import './support';
import { expect } from 'chai';
import type { Request, Response, NextFunction } from 'express';
import { jwtDevAuthPolicy, type JwtDevAuthAction } from '../../policies/jwt-dev-auth';
import { permissionPolicy } from '../../policies/permission';
import { contractRouterPolicy } from '../../policies/contract-router';
import type { AccessAction } from '../../plugin/auth/route-access';
import type { Runtime } from '../../plugin/runtime';
import { SECRET, claims, fakeReq, hs256, isolateAuthEnv, run, type Outcome } from './support';
import { contract, withContracts } from './contracts-fixture';
import { requestContext } from '../../plugin/request/context';

type Middleware = (req: Request, res: Response, next: NextFunction) => unknown;

/** Runs the steps in order as the host would, stopping at the first that answers. */
async function pipeline(steps: Middleware[], req: Request): Promise<Outcome> {
  let out: Outcome | undefined;
  for (const step of steps) {
    out = await run(step, req);
    if (!out.next) return out;
  }
  return out as Outcome;
}

/** The runtime of the suite (withContracts below): its registry holds the contracts of the generated routes. */
let runtime: () => Runtime;

function steps(action: AccessAction, auth: JwtDevAuthAction = { jwtSecret: SECRET }): Middleware[] {
  return [
    jwtDevAuthPolicy(runtime().services).policy({ ...auth, ...action }),
    permissionPolicy(runtime().services).policy(action),
  ];
}

const token = (permissions: string[], extra: Record<string, unknown> = {}) =>
  `Bearer ${hs256(claims({ permissions, ...extra }))}`;

describe('permission policy', () => {
  isolateAuthEnv();
  beforeEach(() => runtime().services.verifiers.clear());
  runtime = withContracts([
    contract('AuthTestCreateThingCommand', { requiredPermissions: ['things:create', 'things:audit'] }),
    contract('AuthTestListThingsQuery', { requiredPermissions: ['things:read'] }),
    contract('AuthTestOpenQuery', { requiredPermissions: [] }),
    contract('AuthTestLoginCommand', { requiredPermissions: ['never:held'], public: true }),
  ]);

  describe('generated routes (contract requiredPermissions)', () => {
    it('lets a caller holding every required permission through', async () => {
      const out = await pipeline(
        steps({ messageType: 'AuthTestCreateThingCommand' }),
        fakeReq({ authorization: token(['things:audit', 'things:create']) }),
      );
      expect(out.next).to.equal(true);
    });

    it('403 INSUFFICIENT_PERMISSIONS naming the first missing permission', async () => {
      const req = fakeReq({ authorization: token(['things:audit']), 'x-correlation-id': 'perm-1' });
      const out = await pipeline(steps({ messageType: 'AuthTestCreateThingCommand' }), req);
      expect(out.status).to.equal(403);
      expect(out.body).to.include({
        code: 'INSUFFICIENT_PERMISSIONS',
        error: 'Forbidden',
        requiredPermission: 'things:create',
        correlationId: 'perm-1',
      });
      expect(out.headers['www-authenticate']).to.equal(undefined);
      const none = await pipeline(
        steps({ messageType: 'AuthTestCreateThingCommand' }),
        fakeReq({ authorization: token([]) }),
      );
      expect(none.body.requiredPermission).to.equal('things:create');
    });

    it('admin:all grants everything', async () => {
      const out = await pipeline(
        steps({ messageType: 'AuthTestCreateThingCommand' }),
        fakeReq({ authorization: token(['admin:all']) }),
      );
      expect(out.next).to.equal(true);
    });

    it('permissions match exactly (no prefix, case or wildcard games)', async () => {
      for (const held of [['THINGS:READ'], ['things:*'], ['things:read '], ['things'], ['admin:al']]) {
        const out = await pipeline(
          steps({ messageType: 'AuthTestListThingsQuery' }),
          fakeReq({ authorization: token(held) }),
        );
        expect(out.status, held[0]).to.equal(403);
      }
    });

    it('permissions come from scope when the token has no permissions claim', async () => {
      const req = fakeReq({ authorization: `Bearer ${hs256(claims({ scope: 'openid things:read' }))}` });
      expect((await pipeline(steps({ messageType: 'AuthTestListThingsQuery' }), req)).next).to.equal(true);
    });

    it('a contract with no required permission needs an authenticated caller only', async () => {
      expect(
        (await pipeline(steps({ messageType: 'AuthTestOpenQuery' }), fakeReq({ authorization: token([]) }))).next,
      ).to.equal(true);
      const anon = await pipeline(steps({ messageType: 'AuthTestOpenQuery' }), fakeReq());
      expect(anon.status).to.equal(401);
      expect(anon.body.code).to.equal('NO_AUTH_HEADER');
    });

    it("an action `required` adds to the contract's", async () => {
      const action = { messageType: 'AuthTestListThingsQuery', required: ['things:export'] };
      expect(
        (await pipeline(steps(action), fakeReq({ authorization: token(['things:read']) }))).body.requiredPermission,
      ).to.equal('things:export');
      expect(
        (await pipeline(steps(action), fakeReq({ authorization: token(['things:read', 'things:export']) }))).next,
      ).to.equal(true);
    });

    it('variants: the contract chosen by the query is the one checked', async () => {
      const action = {
        messageType: 'AuthTestOpenQuery',
        variants: [{ whenQuery: 'list', messageType: 'AuthTestListThingsQuery' }],
      };
      const plain = fakeReq({ authorization: token([]) });
      expect((await pipeline(steps(action), plain)).next).to.equal(true);
      const listing = fakeReq({ authorization: token([]) }, { query: { list: '1' } } as Partial<Request>);
      expect((await pipeline(steps(action), listing)).body.requiredPermission).to.equal('things:read');
    });
  });

  describe('public contracts', () => {
    const login = { messageType: 'AuthTestLoginCommand' };

    it('pass without a token and without any permission check', async () => {
      const req = fakeReq();
      expect((await pipeline(steps(login), req)).next).to.equal(true);
      expect(requestContext(req).caller).to.equal(undefined);
    });

    it('a valid token on a public route still sets the user', async () => {
      const req = fakeReq({ authorization: token(['a:b']) });
      expect((await pipeline(steps(login), req)).next).to.equal(true);
      expect(requestContext(req).caller?.userId).to.equal('user-1');
    });

    it('a bad or expired token on a public route is ignored (the caller goes on anonymous)', async () => {
      for (const authorization of ['Bearer garbage', token([], { exp: Math.floor(Date.now() / 1000) - 60 })]) {
        const req = fakeReq({ authorization });
        expect((await pipeline(steps(login), req)).next).to.equal(true);
        expect(requestContext(req).caller).to.equal(undefined);
      }
    });
  });

  describe('hand-written pipelines (action only)', () => {
    it('`required` on the action', async () => {
      const action = { required: ['reports:read'] };
      expect((await pipeline(steps(action), fakeReq({ authorization: token(['reports:read']) }))).next).to.equal(true);
      const out = await pipeline(steps(action), fakeReq({ authorization: token(['x:y']) }));
      expect(out.status).to.equal(403);
      expect(out.body.requiredPermission).to.equal('reports:read');
    });

    it('nothing on the action: authentication only', async () => {
      expect((await pipeline(steps({}), fakeReq({ authorization: token([]) }))).next).to.equal(true);
      expect((await pipeline(steps({}), fakeReq())).body.code).to.equal('NO_AUTH_HEADER');
    });

    it('`public: true` on the action', async () => {
      expect((await pipeline(steps({ public: true, required: ['x:y'] }), fakeReq())).next).to.equal(true);
    });
  });

  it('no user on a non-public route (no jwt-dev-auth before it) → 401 UNAUTHORIZED with WWW-Authenticate', async () => {
    const out = await run(
      permissionPolicy(runtime().services).policy({ required: [] }),
      fakeReq({ 'x-correlation-id': 'perm-2' }),
    );
    expect(out.status).to.equal(401);
    expect(out.body).to.include({ code: 'UNAUTHORIZED', correlationId: 'perm-2' });
    expect(out.headers['www-authenticate']).to.match(/^Bearer/);
  });

  it('checks a user set by any earlier step', async () => {
    const req = fakeReq();
    requestContext(req).caller = { userId: 'u', email: 'u@x', name: 'u', permissions: ['p:q'] };
    expect((await run(permissionPolicy(runtime().services).policy({ required: ['p:q'] }), req)).next).to.equal(true);
  });

  it('an unknown contract: 401 to an anonymous caller (nothing learnt), 404 once authenticated', async () => {
    const action = { messageType: 'AuthTestNoSuchQuery' };
    expect((await pipeline(steps(action), fakeReq())).body.code).to.equal('NO_AUTH_HEADER');
    const out = await pipeline(steps(action), fakeReq({ authorization: token(['admin:all']) }));
    expect(out.status).to.equal(404);
    expect(out.body.code).to.equal('HANDLER_NOT_FOUND');
  });

  describe('development mode', () => {
    const devAuth = { developmentAuthEnabled: true };

    it('checks run against the X-Dev-Permissions of the development user', async () => {
      const action = { messageType: 'AuthTestListThingsQuery' };
      const denied = await pipeline(
        steps(action, devAuth),
        fakeReq({ 'x-dev-user-id': 'dev', 'x-dev-permissions': 'other:thing' }),
      );
      expect(denied.status).to.equal(403);
      expect(denied.body.requiredPermission).to.equal('things:read');
      const allowed = await pipeline(
        steps(action, devAuth),
        fakeReq({ 'x-dev-user-id': 'dev', 'x-dev-permissions': 'other:thing, things:read' }),
      );
      expect(allowed.next).to.equal(true);
    });

    it('X-Dev-Permissions: admin:all grants everything', async () => {
      const out = await pipeline(
        steps({ messageType: 'AuthTestCreateThingCommand' }, devAuth),
        fakeReq({ 'x-dev-user-id': 'dev', 'x-dev-permissions': 'admin:all' }),
      );
      expect(out.next).to.equal(true);
    });
  });
  describe('contract-router in a hand-written pipeline (the contract holds wherever it is served)', () => {
    const router = (action: Record<string, unknown> = {}) =>
      contractRouterPolicy(runtime().services).policy({ messageType: 'AuthTestCreateThingCommand', ...action });
    const auth = () => jwtDevAuthPolicy(runtime().services).policy({ jwtSecret: SECRET });
    /** The bus has no consumer for the fixture's service: a request the router lets on is answered 503 from there. */
    const reachedBus = (out: Outcome) =>
      expect(out.body?.code, JSON.stringify(out.body)).to.equal('SERVICE_UNAVAILABLE');

    it("jwt-dev-auth + contract-router: 401 anonymous, 403 naming the contract's permission, on to the bus with it", async () => {
      expect((await pipeline([auth(), router()], fakeReq())).status).to.equal(401);
      const without = await pipeline([auth(), router()], fakeReq({ authorization: token(['things:create']) }));
      expect(without.status).to.equal(403);
      expect(without.body).to.include({ code: 'INSUFFICIENT_PERMISSIONS', requiredPermission: 'things:audit' });
      reachedBus(
        await pipeline([auth(), router()], fakeReq({ authorization: token(['things:create', 'things:audit']) })),
      );
    });

    it('a permission step that let the request on in the same pipeline run takes the check over; public: true skips it', async () => {
      const run = { egContext: {} } as never;
      const lax = permissionPolicy(runtime().services).policy({ required: [] });
      reachedBus(await pipeline([auth(), lax, router()], fakeReq({ authorization: token([]) }, run)));
      reachedBus(await pipeline([auth(), router({ public: true })], fakeReq({ authorization: token([]) })));
    });

    it('a permission step of another pipeline run (the host passed the request on) does not count', async () => {
      const req = fakeReq({ authorization: token([]) }, { egContext: {} } as never);
      expect(
        (await pipeline([auth(), permissionPolicy(runtime().services).policy({ required: [] })], req)).next,
      ).to.equal(true);
      // The next endpoint's pipeline: the host gives it a new egContext.
      (req as unknown as { egContext: object }).egContext = {};
      const out = await pipeline([router()], req);
      expect(out.status).to.equal(403);
      expect(out.body.requiredPermission).to.equal('things:create');
    });
  });
});
