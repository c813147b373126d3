import { expect } from 'chai';
import { buildOpenApiDocument } from '../../plugin/openapi/document';
import type { Contract } from '../../plugin/contracts/types';
import { validateOpenApi } from './support';
import { planRoutes } from '../../plugin/contracts/route-plan';

function contract(messageType: string, extra: Partial<Contract> = {}): Contract {
  return {
    messageType,
    targetService: 'users',
    inputSchema: { type: 'object', properties: { userId: { type: 'string' } } },
    outputSchema: { type: 'object' },
    requiredPermissions: ['users:read'],
    ...extra,
  };
}

type Op = { deprecated?: boolean; 'x-contracts': Array<Record<string, unknown>> };

describe('OpenAPI document: deprecated contracts', () => {
  // GET /api/users serves ListUsersQuery, and GetUserQuery with ?userId=: one deprecated, the other not.
  const doc = buildOpenApiDocument(
    planRoutes([
      contract('GetUserQuery', { deprecated: true, sunset: '2030-06-30' }),
      contract('ListUsersQuery'),
      contract('ArchiveUserCommand', { deprecated: true }),
    ]),
  );
  const op = (method: string, path: string): Op => doc.paths[path]?.[method] as Op;

  it('marks an operation whose contracts are all deprecated, and stays a valid document', async () => {
    expect(op('get', '/api/users/{userId}').deprecated).to.equal(true);
    expect(op('post', '/api/archive-user').deprecated).to.equal(true);
    expect(op('get', '/api/users/{userId}')['x-contracts'][0]).to.include({
      messageType: 'GetUserQuery',
      deprecated: true,
      sunset: '2030-06-30',
    });
    expect((await validateOpenApi(doc)).valid).to.equal(true);
  });

  it('does not mark a route it shares with a contract that is not deprecated', () => {
    const shared = op('get', '/api/users');
    expect(shared).to.not.have.property('deprecated');
    expect(shared['x-contracts'].find((c) => c.messageType === 'GetUserQuery')).to.include({ deprecated: true });
    expect(shared['x-contracts'].find((c) => c.messageType === 'ListUsersQuery')).to.not.have.property('deprecated');
  });
});
