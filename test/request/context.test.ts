import { expect } from 'chai';
import express from 'express';
import type { Request } from 'express';
import type { AddressInfo } from 'node:net';
import { requestContext, runContext } from '../../plugin/request/context';
import { bodyOf, readBody } from '../../plugin/request/body';
import { replayBodyForProxy } from '../../plugin/request/replay-body';
import { routeOf } from '../../plugin/pipeline/resolve-contract';

/**
 * The request context lives beside the host's request object, never on it: a property added to a request that
 * Express has re-prototyped costs a new hidden class per request (see plugin/request/context.ts).
 */
describe('request context', () => {
  it('is one object per request, the same on every call, and adds no property to the request', async () => {
    const seen: Array<{ added: Array<string | symbol>; same: boolean; user: unknown }> = [];
    const states: object[] = [];
    const app = express();
    app.get('/x', (req, res) => {
      const before = Reflect.ownKeys(req);
      const state = requestContext(req);
      requestContext(req).caller = { userId: 'u1', permissions: [] } as never;
      const added = Reflect.ownKeys(req).filter((k) => !before.includes(k));
      seen.push({ added, same: requestContext(req) === state, user: requestContext(req).caller });
      states.push(state);
      res.end('ok');
    });
    await withServer(app, async (base) => {
      await fetch(`${base}/x`);
      await fetch(`${base}/x`);
    });
    expect(seen).to.have.length(2);
    for (const s of seen) {
      expect(s.added).to.deep.equal([]);
      expect(s.same).to.equal(true);
      expect(s.user).to.deep.equal({ userId: 'u1', permissions: [] });
    }
    expect(states[0]).to.not.equal(states[1]);
  });

  it('a request passed on by a hand-written pipeline finds the route of the endpoint it reaches next', () => {
    // The host gives the request a new egContext for each endpoint it enters; nothing of the first may stick.
    const req = { egContext: { apiEndpoint: {} } } as unknown as Request;
    expect(routeOf(runContext(req), req, {})).to.equal(undefined);
    const route = { messageType: 'GetUserQuery' };
    (req as unknown as { egContext: object }).egContext = { apiEndpoint: { contract: route } };
    expect(routeOf(runContext(req), req, {})).to.equal(route);
  });

  it('keeps the read body (and its bytes for a proxy) in the context: read once, handed out again', async () => {
    const results: Array<{ same: boolean; body: unknown; added: Array<string | symbol>; replayed: string }> = [];
    let parserAdds: Array<string | symbol> = [];
    const app = express();
    // The host gives every request an egContext before its pipeline runs.
    app.use((req, _res, next) => {
      (req as Request & { egContext: object }).egContext = {};
      next();
    });
    // What the JSON parser adds by itself, for comparison: the same request read by express.json alone.
    app.post(
      '/parser',
      (req, res, next) => {
        const before = Reflect.ownKeys(req);
        express.json()(req, res, () => {
          parserAdds = Reflect.ownKeys(req).filter((k) => !before.includes(k));
          next();
        });
      },
      (_req, res) => res.end('ok'),
    );
    app.post('/x', (req, res) => {
      void (async () => {
        const before = Reflect.ownKeys(req);
        await readBody(requestContext(req), req, res);
        const first = bodyOf(requestContext(req), req);
        // Read already: a second read reads nothing and gives the same body.
        const readAgain = readBody(requestContext(req), req, res);
        const second = bodyOf(requestContext(req), req);
        const added = Reflect.ownKeys(req).filter((k) => !before.includes(k));
        replayBodyForProxy(requestContext(req), req);
        const ctx = (req as Request & { egContext: { requestStream?: AsyncIterable<unknown> } }).egContext;
        let replayed = '';
        for await (const chunk of ctx.requestStream ?? []) replayed += String(chunk);
        results.push({ same: first === second && readAgain === undefined, body: first, added, replayed });
        res.end('ok');
      })();
    });
    await withServer(app, async (base) => {
      const post = (path: string) =>
        fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a": 1}' });
      await post('/parser');
      await post('/x');
    });
    expect(parserAdds).to.include('body');
    expect(results).to.have.length(1);
    expect(results[0]!.same).to.equal(true);
    expect(results[0]!.body).to.deep.equal({ a: 1 });
    // Only what the parser itself adds (body, …): no property of ours.
    expect([...results[0]!.added].sort()).to.deep.equal([...parserAdds].sort());
    expect(results[0]!.replayed).to.equal('{"a": 1}');
  });
});

async function withServer(app: express.Express, run: (base: string) => Promise<void>): Promise<void> {
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  try {
    await run(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
