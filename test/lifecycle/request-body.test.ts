import '../auth/support';
import { expect } from 'chai';
import express from 'express';
import type { NextFunction, Request, Response } from 'express';
import type { AddressInfo } from 'node:net';
import { contractRateLimitPolicy } from '../../policies/contract-rate-limit';
import { jwtDevAuthPolicy } from '../../policies/jwt-dev-auth';
import { permissionPolicy } from '../../policies/permission';
import { schemaValidationPolicy } from '../../policies/schema-validation';
import { contractOf } from '../../plugin/pipeline/resolve-contract';
import { inputOf } from '../../plugin/pipeline/message-input';
import { requestContext, runContext } from '../../plugin/request/context';
import { runner, type Step } from '../../plugin/lifecycle/runner';
import { bodyOf, bodyToRead } from '../../plugin/request/body';
import type { Contract } from '../../plugin/contracts/types';
import { SECRET, claims, fakeReq, hs256, isolateAuthEnv, run } from '../auth/support';
import { quiet, testRuntime } from '../support/runtime';

const CREATE: Contract = {
  messageType: 'CreateThingCommand',
  targetService: 'things',
  requiredPermissions: ['things:create'],
  inputSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
  outputSchema: {},
};
const GET: Contract = {
  messageType: 'GetThingQuery',
  targetService: 'things',
  requiredPermissions: ['things:read'],
  inputSchema: { type: 'object', properties: { thingId: { type: 'string' } } },
  outputSchema: {},
};
/** The routes as generated apiEndpoints carry them: the generic dispatch on the body, and a route naming its contract. */
const ACTIONS = { dispatch: 'body', messageTypes: [CREATE.messageType] };
const THINGS = { messageType: CREATE.messageType };
const BODY_LIMIT = 256;
const MAX_DEPTH = 4;

/**
 * The body of a request is read once, by the runner, before the first step that needs it; a body that cannot be read
 * is answered by the step that asks for it, in the pipeline's order: an anonymous caller learns nothing about it.
 */
describe('runner: the request body, read once before the step that needs it', () => {
  isolateAuthEnv();
  // The generated pipeline's steps with their empty actions: the key comes from the runtime's settings (JWT_SECRET).
  const runtime = testRuntime({ bodyLimitBytes: BODY_LIMIT, maxJsonDepth: MAX_DEPTH }, quiet, { JWT_SECRET: SECRET });
  runtime.discovery.registry.apply({ service: 'things', instanceId: 'i1', ttlMs: 60000, contracts: [CREATE, GET] });
  const steps = [contractRateLimitPolicy, jwtDevAuthPolicy, permissionPolicy, schemaValidationPolicy].map((p) =>
    p(runtime.services).policy({}),
  );
  let server: ReturnType<express.Express['listen']>;
  let base: string;

  before(async () => {
    const app = express();
    for (const [path, route] of [
      ['/api/actions', ACTIONS],
      ['/api/things', THINGS],
    ] as const) {
      app.post(
        path,
        (req: Request, _res: Response, next: NextFunction) => {
          (req as Request & { egContext: object }).egContext = { apiEndpoint: { contract: route } };
          next();
        },
        ...steps,
        (req: Request, res: Response) => {
          const ctx = runContext(req);
          res.json({ input: inputOf(ctx, req, contractOf(ctx, req, {}, runtime.services)) });
        },
      );
    }
    server = app.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => server.once('listening', () => resolve()));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    await new Promise((resolve) => server.close(resolve));
    await runtime.close();
  });

  const token = (permissions: string[]) => `Bearer ${hs256(claims({ permissions }))}`;
  const deep = (levels: number) =>
    `{"messageType":"${CREATE.messageType}","input":{"name":"x","n":${'['.repeat(levels)}${']'.repeat(levels)}}}`;
  /** Bodies that cannot be read, each with the answer its step gives. */
  const unreadable: Array<[string, string, string, number, string]> = [
    ['malformed', '{"messageType":', 'application/json', 400, 'BAD_REQUEST'],
    ['not JSON', 'messageType=CreateThingCommand', 'text/plain', 415, 'UNSUPPORTED_MEDIA_TYPE'],
    ['nested too deep', deep(MAX_DEPTH), 'application/json', 400, 'VALIDATION_ERROR'],
    [
      'declared longer than the limit',
      JSON.stringify({ messageType: CREATE.messageType, input: { name: 'x'.repeat(BODY_LIMIT) } }),
      'application/json',
      413,
      'PAYLOAD_TOO_LARGE',
    ],
  ];
  const post = (path: string, body: string, type: string, authorization?: string) =>
    fetch(`${base}${path}`, {
      method: 'POST',
      body,
      headers: { 'content-type': type, ...(authorization ? { authorization } : {}) },
    });

  for (const [what, body, type, status, code] of unreadable) {
    it(`POST /api/actions with a body ${what}: 401 to an anonymous caller, ${status} ${code} once authenticated`, async () => {
      const anonymous = await post('/api/actions', body, type);
      expect(anonymous.status).to.equal(401);
      expect(((await anonymous.json()) as { code: string }).code).to.equal('NO_AUTH_HEADER');
      const known = await post('/api/actions', body, type, token(['things:create']));
      expect(known.status).to.equal(status);
      expect(((await known.json()) as { code: string }).code).to.equal(code);
      // A declared length over the limit is refused unread, and the connection closed after the answer.
      expect(known.headers.get('connection')).to.equal(status === 413 ? 'close' : 'keep-alive');
    });

    it(`POST /api/things with a body ${what}: 401, then 403 without the permission, then ${status} ${code}`, async () => {
      expect((await post('/api/things', body, type)).status).to.equal(401);
      const forbidden = await post('/api/things', body, type, token(['things:read']));
      expect(forbidden.status).to.equal(403);
      expect(((await forbidden.json()) as { code: string }).code).to.equal('INSUFFICIENT_PERMISSIONS');
      // The route names its contract: the body is read only by the step that builds the input, after the checks.
      expect(forbidden.headers.get('connection')).to.equal('keep-alive');
      const known = await post('/api/things', body, type, token(['things:create']));
      expect(known.status).to.equal(status);
      expect(((await known.json()) as { code: string }).code).to.equal(code);
    });
  }

  it('POST /api/actions: the message type and input come from the body read once; the envelope is taken off', async () => {
    const res = await post(
      '/api/actions',
      JSON.stringify({ messageType: CREATE.messageType, input: { name: 'box' } }),
      'application/json',
      token(['things:create']),
    );
    expect(res.status).to.equal(200);
    expect(await res.json()).to.deep.equal({ input: { name: 'box' } });
  });

  it('POST /api/actions naming a message type the route does not serve: 401 anonymous, then 503 while the bus is not up', async () => {
    const body = JSON.stringify({ messageType: 'NoSuchCommand', input: {} });
    expect((await post('/api/actions', body, 'application/json')).status).to.equal(401);
    const known = await post('/api/actions', body, 'application/json', token(['things:create']));
    // The runtime's bus is not started: a route not known yet is 503, never a 404 a client would take as final.
    expect(known.status).to.equal(503);
    expect(((await known.json()) as { code: string }).code).to.equal('SERVICE_UNAVAILABLE');
  });

  it('a request without a body goes through every step before the call returns (no promise, once the token is verified)', async () => {
    const authorization = token(['things:read']);
    const getThing = () =>
      fakeReq({ authorization }, {
        egContext: { apiEndpoint: { contract: { messageType: GET.messageType } } },
        params: { thingId: 't1' },
      } as never);
    // First use verifies the token (asynchronous), then it is in the shared cache.
    const first = getThing();
    for (const step of steps) expect((await run(step, first)).next).to.equal(true);
    const req = getThing();
    const res = { setHeader: () => undefined, getHeader: () => undefined, headersSent: false } as unknown as Response;
    const passed: number[] = [];
    const from = (i: number): void => {
      if (i >= steps.length) return;
      steps[i](req, res, () => {
        passed.push(i);
        from(i + 1);
      });
    };
    from(0);
    passed.push(-1);
    expect(passed).to.deep.equal([0, 1, 2, 3, -1]);
    expect(requestContext(req).caller?.permissions).to.deep.equal(['things:read']);
    const ctx = runContext(req);
    expect(inputOf(ctx, req, contractOf(ctx, req, {}, runtime.services))).to.deep.equal({ thingId: 't1' });
  });

  it("shares one context across the steps: the host's route read once per pipeline run, the contract resolved once", async () => {
    const authorization = token(['things:read']);
    let routeReads = 0;
    const endpoint = {
      get contract() {
        routeReads++;
        return { messageType: GET.messageType };
      },
    };
    const getThing = (): Request => fakeReq({ authorization }, { egContext: { apiEndpoint: endpoint } } as never);
    // The token verified once before, so that the run below is the fast path.
    const first = getThing();
    for (const step of steps) expect((await run(step, first)).next).to.equal(true);
    routeReads = 0;
    const req = getThing();
    const res = { setHeader: () => undefined, getHeader: () => undefined, headersSent: false } as unknown as Response;
    const seen: Array<{ ctx: object; resolved: object | undefined }> = [];
    const from = (i: number): void => {
      if (i >= steps.length) return;
      steps[i](req, res, () => {
        const ctx = requestContext(req);
        seen.push({ ctx, resolved: ctx.run.resolved });
        from(i + 1);
      });
    };
    from(0);
    expect(seen).to.have.length(steps.length);
    expect(new Set(seen.map((s) => s.ctx)).size, 'one context for the request').to.equal(1);
    expect(new Set(seen.map((s) => s.resolved)).size, 'the contract resolved once').to.equal(1);
    expect(seen[0]!.resolved).to.not.equal(undefined);
    expect(routeReads, "the host's route, read once for the run").to.equal(1);

    // The host passes the request on to another endpoint: a new run there, which reads its own route.
    (req as unknown as { egContext: object }).egContext = { apiEndpoint: endpoint };
    const again = await run(steps[2]!, req);
    expect(again.next).to.equal(true);
    expect(routeReads).to.equal(2);
    expect(requestContext(req), 'still the one context of the request').to.equal(seen[0]!.ctx);
  });
});

describe('runner: a step that declares it needs the body', () => {
  /** Serves `steps` on POST /x (answering 200 with what they saw once all called next()); returns the server's base URL. */
  async function serve(steps: Step[], use: (base: string) => Promise<void>): Promise<void> {
    const app = express();
    app.post('/x', runner(steps), (_req, res) => res.status(200).end('done'));
    const server = app.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => server.once('listening', () => resolve()));
    try {
      await use(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  }
  const postJson = (base: string, body: string) =>
    fetch(`${base}/x`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  const limits = { bodyLimitBytes: 1024, maxJsonDepth: 8 };
  /** A step that needs its input, on a route that names no contract: the body of every request it admits. */
  const wantsBody = { body: 'input', route: {}, limits } as const;

  it('gets it read before it runs, once: a step before it runs unread, a step after it finds the same body', async () => {
    const seen: string[] = [];
    const bodies: unknown[] = [];
    const steps: Step[] = [
      {
        run: (req, _res, ctx) => void seen.push(`first: unread ${bodyToRead(ctx, req)}`),
        failed: () => expect.fail('no failure'),
      },
      {
        admit: (req, ctx) => void seen.push(`second admits: unread ${bodyToRead(ctx, req)}`),
        run: (req, _res, ctx) => void bodies.push(bodyOf(ctx, req)),
        failed: () => expect.fail('no failure'),
        needs: wantsBody,
      },
      {
        admit: (req, ctx) => void seen.push(`third admits: unread ${bodyToRead(ctx, req)}`),
        run: (req, _res, ctx) => void bodies.push(bodyOf(ctx, req)),
        failed: () => expect.fail('no failure'),
        needs: wantsBody,
      },
    ];
    await serve(steps, async (base) => {
      const res = await postJson(base, '{"a":1}');
      expect(res.status).to.equal(200);
    });
    expect(seen).to.deep.equal(['first: unread true', 'second admits: unread true', 'third admits: unread false']);
    expect(bodies[0]).to.deep.equal({ a: 1 });
    expect(bodies[1]).to.equal(bodies[0]);
  });

  it('is not read for a request the step does not admit: the refusal is answered with the body unread', async () => {
    const seen: string[] = [];
    const steps: Step[] = [
      {
        admit: () => {
          throw Object.assign(new Error('refused'), { code: 'FORBIDDEN' });
        },
        run: () => expect.fail('a step that did not admit the request does not run'),
        failed: (_err, req, res) => {
          seen.push(`failed, unread ${bodyToRead(requestContext(req), req)}`);
          res.status(403).end('refused');
        },
        needs: wantsBody,
      },
    ];
    await serve(steps, async (base) => {
      const res = await postJson(base, '{"a":1}');
      expect(res.status).to.equal(403);
    });
    expect(seen).to.deep.equal(['failed, unread true']);
  });

  it('keeps a body that cannot be read as its error: a step that does not ask goes on, the one that asks answers it', async () => {
    const seen: string[] = [];
    const steps: Step[] = [
      { run: () => void seen.push('reads nothing'), failed: () => expect.fail('no failure'), needs: wantsBody },
      {
        run: (req, _res, ctx) => {
          seen.push('asks');
          bodyOf(ctx, req);
        },
        failed: (err, _req, res) => {
          seen.push(`failed: ${(err as { code?: string }).code}`);
          res.status(400).end('refused');
        },
      },
    ];
    await serve(steps, async (base) => {
      const res = await postJson(base, '{"a":');
      expect(res.status).to.equal(400);
    });
    expect(seen).to.deep.equal(['reads nothing', 'asks', 'failed: BAD_REQUEST']);
  });
});
