import { expect } from 'chai';
import { buildOpenApiDocument } from '../../plugin/openapi';
import type { Contract } from '../../plugin/contracts/types';
import { referenceContracts, validateOpenApi } from './support';

type Op = { parameters?: Array<{ name: string; in: string }> };

function headerParams(op: Op | undefined): string[] {
  return (op?.parameters ?? []).filter((p) => p.in === 'header').map((p) => p.name);
}

describe('OpenAPI document: Idempotency-Key', () => {
  const action: Contract = { messageType: 'ArchiveOrdersCommand', targetService: 'orders', inputSchema: { type: 'object' }, outputSchema: {}, requiredPermissions: [] };
  const doc = buildOpenApiDocument([...referenceContracts(), action]);
  const op = (method: string, path: string): Op | undefined => doc.paths[path]?.[method] as Op | undefined;

  it('is an optional header parameter of commands and POSTs, not of GET queries', async () => {
    expect(headerParams(op('post', '/api/users'))).to.deep.equal(['Idempotency-Key']);
    expect(headerParams(op('delete', '/api/users/{userId}'))).to.deep.equal(['Idempotency-Key']);
    expect(headerParams(op('post', '/api/actions'))).to.deep.equal(['Idempotency-Key']);
    expect(headerParams(op('get', '/api/users/{userId}'))).to.deep.equal([]);
    expect((await validateOpenApi(doc)).valid).to.equal(true);
  });
});
