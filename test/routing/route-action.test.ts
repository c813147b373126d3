import { expect } from 'chai';
import type { Request } from 'express';
import { buildEndpointSpecs } from '../../plugin/contracts/endpoint-specs';
import { kindStatus, successStatus } from '../../plugin/contracts/success-status';
import type { Contract } from '../../plugin/contracts/types';
import { contractOf, type ContractSource } from '../../plugin/pipeline/resolve-contract';
import { runContext } from '../../plugin/request/context';
import { routeAction } from '../../plugin/routing/route-action';

function contract(messageType: string, http?: Contract['http']): Contract {
  const c: Contract = {
    messageType,
    targetService: 'things',
    inputSchema: {},
    outputSchema: {},
    requiredPermissions: [],
  };
  if (http) c.http = http;
  return c;
}

const CONTRACTS = [
  contract('CreateThingCommand'),
  contract('UpdateThingCommand'),
  contract('DeleteThingCommand'),
  contract('GetThingQuery'),
  contract('ListThingsQuery'),
  contract('ApproveThingCommand'),
  contract('ThingStatsQuery'),
  contract('ArchiveThingCommand', { method: 'DELETE', paths: ['/api/things/:thingId/archive'] }),
];

const source: ContractSource = {
  settings: {},
  transport: { state: () => 'up' },
  discoveryGrace: { remainingMs: () => 0 },
  contract: (messageType) => CONTRACTS.find((c) => c.messageType === messageType),
};

/** A request on a generated endpoint: the host gives it the endpoint's `contract:` (the route action). */
function onEndpoint(route: object, init: Record<string, unknown> = {}): Request {
  return {
    method: 'GET',
    headers: {},
    query: {},
    egContext: { apiEndpoint: { contract: route } },
    ...init,
  } as unknown as Request;
}

describe('the route action carries the route kind', () => {
  const { endpoints } = buildEndpointSpecs(CONTRACTS);

  it('on every generated route: the default contract, each variant and the generic dispatch routes', () => {
    const kinds = endpoints.map((e) => {
      const a = routeAction(e);
      return `${e.method} ${e.path} ${a.kind ?? '-'} ${(a.variants ?? []).map((v) => `${v.whenQuery}:${v.kind}`).join(',')}`;
    });
    expect(kinds).to.include.members([
      'POST /api/things create ',
      'PUT /api/things/:id update ',
      'DELETE /api/things/:id delete ',
      'GET /api/things/:id get ',
      'POST /api/actions command ',
      'POST /api/approve-thing command ',
      'GET /api/data query ',
      'DELETE /api/things/:thingId/archive command ',
    ]);
    const collection = endpoints.find((e) => e.method === 'GET' && e.path === '/api/things')!;
    expect(routeAction(collection)).to.deep.include({ messageType: 'ListThingsQuery', kind: 'list' });
    expect(routeAction(collection).variants).to.deep.equal([
      { whenQuery: 'id', messageType: 'GetThingQuery', kind: 'get' },
    ]);
  });

  it('gives the success status the message type gave, on every route and method, without deriving it again', () => {
    for (const e of endpoints) {
      const action = routeAction(e);
      const served = [
        ...(action.messageType ? [{ messageType: action.messageType, kind: action.kind }] : []),
        ...(action.variants ?? []),
        ...(action.messageTypes ?? []).map((messageType) => ({ messageType, kind: action.kind })),
      ];
      for (const s of served) {
        expect(s.kind, `${e.method} ${e.path} ${s.messageType}`).to.be.a('string');
        expect(kindStatus(s.kind!, e.method), `${e.method} ${e.path} ${s.messageType}`).to.equal(
          successStatus(s.messageType, e.method),
        );
      }
    }
  });

  it('is kept with the resolved contract: the variant the query picks, the dispatch route, none for a hand-written step', () => {
    const collection = routeAction(endpoints.find((e) => e.method === 'GET' && e.path === '/api/things')!);
    const kindOf = (req: Request, action: object = {}) => contractOf(runContext(req), req, action, source).kind;
    expect(kindOf(onEndpoint(collection))).to.equal('list');
    expect(kindOf(onEndpoint(collection, { query: { id: 't1' } }))).to.equal('get');
    const data = routeAction(endpoints.find((e) => e.path === '/api/data')!);
    expect(kindOf(onEndpoint(data, { query: { messageType: 'ThingStatsQuery' } }))).to.equal('query');
    // A hand-written step naming its contract carries no kind: the router derives it from the message type.
    expect(kindOf(onEndpoint({}), { messageType: 'CreateThingCommand' })).to.equal(undefined);
  });
});
