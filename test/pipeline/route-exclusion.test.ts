import { expect } from 'chai';
import type { Request } from 'express';
import { contractOf, type ContractSource, type RouteAction } from '../../plugin/pipeline/resolve-contract';
import { runContext } from '../../plugin/request/context';
import { resolveSettings } from '../../plugin/settings';
import { validateSettings } from '../../plugin/settings/validation';
import { buildEndpointSpecs } from '../../plugin/contracts/endpoint-specs';
import type { Contract } from '../../plugin/contracts/types';
import { GatewayError } from '../../plugin/errors/gateway-error';

function contract(messageType: string): Contract {
  return { messageType, targetService: 'orders-service', inputSchema: {}, outputSchema: {}, requiredPermissions: [] };
}

describe('excludeFromGeneratedRoutes', () => {
  it('is a list in system.config.yml or comma-separated in EXCLUDE_FROM_GENERATED_ROUTES; the block wins', () => {
    expect(resolveSettings({}, {}).excludeFromGeneratedRoutes).to.deep.equal([]);
    expect(
      resolveSettings({ excludeFromGeneratedRoutes: ['B', 'A', 'B'] }, {}).excludeFromGeneratedRoutes,
    ).to.deep.equal(['A', 'B']);
    expect(
      resolveSettings({}, { EXCLUDE_FROM_GENERATED_ROUTES: ' CreateOrderCommand, Orders.v2:GetQuery ,' })
        .excludeFromGeneratedRoutes,
    ).to.deep.equal(['CreateOrderCommand', 'Orders.v2:GetQuery']);
    expect(
      resolveSettings({ excludeFromGeneratedRoutes: ['A'] }, { EXCLUDE_FROM_GENERATED_ROUTES: 'B' })
        .excludeFromGeneratedRoutes,
    ).to.deep.equal(['A']);
  });

  it('refuses what cannot be a message type, so a slip never leaves a route open by accident', () => {
    expect(() =>
      validateSettings({}, { EXCLUDE_FROM_GENERATED_ROUTES: 'CreateOrderCommand; DeleteOrderCommand' }),
    ).to.throw(/EXCLUDE_FROM_GENERATED_ROUTES must match/);
    expect(() => validateSettings({ excludeFromGeneratedRoutes: ['Create Order'] }, {})).to.throw(
      /plugins\.contracts\.excludeFromGeneratedRoutes/,
    );
    expect(() => validateSettings({ excludeFromGeneratedRoutes: { CreateOrderCommand: true } }, {})).to.throw(
      /plugins\.contracts\.excludeFromGeneratedRoutes/,
    );
    expect(validateSettings({ excludeFromGeneratedRoutes: ['CreateOrderCommand'] }, {})).to.deep.equal({
      excludeFromGeneratedRoutes: ['CreateOrderCommand'],
    });
  });

  it('leaves the excluded contracts out of the route table: no route, no generic dispatch, no conflict', () => {
    const contracts = [
      contract('CreateOrderCommand'),
      contract('ApproveOrderCommand'),
      contract('RefundOrderCommand'),
      contract('OrderStatsQuery'),
    ];
    const table = buildEndpointSpecs(contracts, {
      excluded: ['CreateOrderCommand', 'ApproveOrderCommand', 'OrderStatsQuery'],
    });
    expect(table.endpoints.map((e) => `${e.method} ${e.path} ${e.messageTypes.join(',')}`)).to.deep.equal([
      'POST /api/actions RefundOrderCommand',
      'POST /api/refund-order RefundOrderCommand',
    ]);
  });

  describe('a generated route in a file written before the setting (a stale entry)', () => {
    const source: ContractSource = {
      settings: { excludeFromGeneratedRoutes: ['CreateOrderCommand', 'ApproveOrderCommand'] },
      transport: { state: () => 'up' },
      discoveryGrace: { remainingMs: () => 0 },
      contract: (messageType) => contract(messageType),
    };
    const onEndpoint = (route: object, init: Partial<Request> = {}) =>
      ({
        method: 'POST',
        url: '/api/x',
        path: '/api/x',
        query: {},
        headers: {},
        egContext: { apiEndpoint: { contract: route } },
        ...init,
      }) as unknown as Request;
    const resolve = (req: Request, action: RouteAction, from: ContractSource) =>
      contractOf(runContext(req), req, action, from);
    const notFound = (fn: () => unknown) => {
      try {
        fn();
      } catch (err) {
        expect(err).to.be.instanceOf(GatewayError);
        expect((err as GatewayError).code).to.equal('HANDLER_NOT_FOUND');
        return;
      }
      expect.fail('expected HANDLER_NOT_FOUND');
    };

    it('does not reach an excluded contract, directly or by dispatch', () => {
      notFound(() => resolve(onEndpoint({ messageType: 'CreateOrderCommand' }), {}, source));
      notFound(() =>
        resolve(
          onEndpoint(
            { dispatch: 'query', messageTypes: ['ApproveOrderCommand'] },
            { method: 'GET', query: { messageType: 'ApproveOrderCommand' } },
          ),
          {},
          source,
        ),
      );
      expect(resolve(onEndpoint({ messageType: 'RefundOrderCommand' }), {}, source).contract.messageType).to.equal(
        'RefundOrderCommand',
      );
    });

    it('still lets a hand-written step that names the contract reach it', () => {
      const resolved = resolve(onEndpoint({}), { messageType: 'CreateOrderCommand' }, source);
      expect(resolved.contract.messageType).to.equal('CreateOrderCommand');
    });
  });
});
