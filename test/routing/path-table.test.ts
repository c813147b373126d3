import { expect } from 'chai';
import express from 'express';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { fitsTable, ParamDecodeError, PathTable, unfitPaths } from '../../plugin/routing/path-table';
import { buildEndpointSpecs, comparePaths } from '../../plugin/contracts/endpoint-specs';

const ROUTES: Array<[string, string]> = [
  ['GET', '/api/users'],
  ['POST', '/api/users'],
  ['GET', '/api/users/me'],
  ['GET', '/api/users/:userId'],
  ['PUT', '/api/users/:userId'],
  ['DELETE', '/api/users/:userId'],
  ['GET', '/api/users/:userId/permissions'],
  ['GET', '/api/users/:id/orders/:orderId'],
  ['GET', '/api/order-items/:orderItemId'],
  ['POST', '/api/actions'],
  ['GET', '/api/data'],
  ['POST', '/api/reset.password'],
  ['GET', '/api'],
];

/** In the route table's order, which is the order Express tries the endpoints in. */
const ordered = [...ROUTES].sort(([, a], [, b]) => comparePaths(a, b));
const table = new PathTable(ordered.map(([method, path]) => ({ method, path, value: `${method} ${path}` })));

describe('routing: the path table', () => {
  describe('answers as Express does with one route per endpoint', () => {
    let server: Server;
    let base: string;

    before(async () => {
      const app = express();
      for (const [method, path] of ordered) {
        (app as unknown as Record<string, (p: string, h: express.RequestHandler) => void>)[method.toLowerCase()]!(
          path,
          (req, res) => {
            res.json({ value: `${method} ${path}`, params: { ...req.params } });
          },
        );
      }
      app.use((_req, res) => res.status(404).json({ value: null }));
      app.use((_err: unknown, _req: express.Request, res: express.Response, _next: express.NextFunction) =>
        res.status(400).json({ value: 'decode-error' }),
      );
      server = app.listen(0, '127.0.0.1');
      await new Promise((r) => server.once('listening', r));
      base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    after(() => server.close());

    const REQUESTS: Array<[string, string]> = [
      ['GET', '/api/users'],
      ['GET', '/api/users/'],
      ['GET', '/API/Users'],
      ['POST', '/api/users'],
      ['PATCH', '/api/users'],
      ['GET', '/api/users/me'],
      ['GET', '/api/users/ME'],
      ['GET', '/api/users/u-1'],
      ['GET', '/api/users/U-1/'],
      ['PUT', '/api/users/u%201'],
      ['DELETE', '/api/users/%E2%82%AC'],
      ['GET', '/api/users/u-1/permissions'],
      ['GET', '/api/users/me/permissions'],
      ['GET', '/api/users/a/orders/b'],
      ['GET', '/api/users//'],
      ['GET', '/api/users//permissions'],
      ['GET', '/api/order-items/7'],
      ['POST', '/api/actions'],
      ['GET', '/api/actions'],
      ['GET', '/api/data'],
      ['GET', '/api'],
      ['GET', '/api/'],
      ['GET', '/api/reset.password'],
      ['POST', '/api/reset.password'],
      ['POST', '/api/resetxpassword'],
      ['GET', '/api/users/u-1/permissions/extra'],
      ['GET', '/apix/users'],
      ['GET', '/'],
      ['HEAD', '/api/users/u-1'],
      ['GET', '/api/users/%75sers'],
      ['GET', '/api/%75sers'],
      ['GET', '/api/users/a%2Fb'],
    ];

    for (const [method, path] of REQUESTS) {
      it(`${method} ${path}`, async () => {
        const res = await fetch(`${base}${path}`, { method });
        const ours = table.match(method, path);
        if (method === 'HEAD') {
          // No body on HEAD: Express's status says whether a route matched.
          expect(res.status).to.equal(ours ? 200 : 404);
          return;
        }
        const express = (await res.json()) as { value: string | null; params?: Record<string, string> };
        expect(ours?.value ?? null).to.equal(express.value);
        if (ours) expect(ours.params).to.deep.equal(express.params);
      });
    }
  });

  it('decodes parameters, and refuses a malformed escape as Express does (ParamDecodeError → 400)', () => {
    expect(table.match('GET', '/api/users/J%C3%BCrgen')?.params).to.deep.equal({ userId: 'Jürgen' });
    expect(() => table.match('GET', '/api/users/%E0%A4%A')).to.throw(ParamDecodeError);
    // A malformed escape in a static segment is simply no match.
    expect(table.match('GET', '/api/%zz')).to.equal(undefined);
  });

  it('keeps the first entry for a method and path, like the first registered Express route', () => {
    const t = new PathTable([
      { method: 'GET', path: '/api/a/:x', value: 'first' },
      { method: 'GET', path: '/api/a/:x', value: 'second' },
      { method: 'GET', path: '/api/a/:y', value: 'other name' },
    ]);
    expect(t.size).to.equal(2);
    expect(t.match('GET', '/api/a/1')).to.deep.equal({ value: 'first', params: { x: '1' } });
  });

  it('backtracks: a static segment that leads nowhere gives way to a parameter', () => {
    const t = new PathTable([
      { method: 'GET', path: '/api/users/me/settings', value: 'settings' },
      { method: 'GET', path: '/api/users/:id/orders', value: 'orders' },
    ]);
    expect(t.match('GET', '/api/users/me/orders')).to.deep.equal({ value: 'orders', params: { id: 'me' } });
    expect(t.match('GET', '/api/users/me/settings')?.value).to.equal('settings');
    expect(t.match('POST', '/api/users/me/settings')).to.equal(undefined);
  });

  it('holds only static segments and :name parameters; other Express syntax stays on an endpoint of its own', () => {
    for (const path of ['/api/users', '/api/users/:userId', '/api/order-items/:id/x.y', '/'])
      expect(fitsTable(path), path).to.equal(true);
    for (const path of [
      'api/users',
      '/api/files/*',
      '/api/users/:id?',
      '/api/(a|b)',
      '/api/a+b',
      '/api/$x',
      '/api/:id(\\d+)',
      '/api/:1x',
    ]) {
      expect(fitsTable(path), path).to.equal(false);
    }
    expect(() => new PathTable([{ method: 'GET', path: '/api/files/*', value: 1 }])).to.throw(/cannot hold/);
    const routes = buildEndpointSpecs([
      {
        messageType: 'GetUserQuery',
        targetService: 'users',
        inputSchema: {},
        outputSchema: {},
        requiredPermissions: [],
      },
      {
        messageType: 'DownloadQuery',
        targetService: 'files',
        inputSchema: {},
        outputSchema: {},
        requiredPermissions: [],
        http: { method: 'GET', paths: ['/api/files/*'] },
      },
    ]);
    expect(unfitPaths(routes.endpoints)).to.deep.equal(['/api/files/*']);
  });

  it('finds a route among 2,000 without trying them one by one', () => {
    const many = new PathTable(
      Array.from({ length: 1000 }, (_, i) => [
        { method: 'GET', path: `/api/asset${i}s/:asset${i}Id`, value: `get ${i}` },
        { method: 'POST', path: `/api/asset${i}s`, value: `create ${i}` },
      ]).flat(),
    );
    expect(many.size).to.equal(2000);
    expect(many.match('GET', '/api/asset999s/x')).to.deep.equal({ value: 'get 999', params: { asset999Id: 'x' } });
    expect(many.match('POST', '/api/asset0s')?.value).to.equal('create 0');
    expect(many.match('GET', '/api/asset1000s/x')).to.equal(undefined);
  });
});
