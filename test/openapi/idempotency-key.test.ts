import { expect } from 'chai';
import { buildOpenApiDocument } from '../../plugin/openapi/document';
import type { Contract } from '../../plugin/contracts/types';
import { referenceContracts, validateOpenApi } from './support';
import { INIT_SCRIPT } from '../../plugin/operations/docs-page';
import { FRESH_IDEMPOTENCY_KEY } from '../../plugin/openapi/examples';
import { planRoutes } from '../../plugin/contracts/route-plan';
import { parseIdempotencyKey } from '../../plugin/pipeline/idempotency-key';
import { IDEMPOTENCY_KEY_PARAMETER } from '../../plugin/openapi/idempotency';

type Op = { parameters?: Array<{ name: string; in: string }> };

function headerParams(op: Op | undefined): string[] {
  return (op?.parameters ?? []).filter((p) => p.in === 'header').map((p) => p.name);
}

describe('OpenAPI document: Idempotency-Key', () => {
  const action: Contract = {
    messageType: 'ArchiveOrdersCommand',
    targetService: 'orders',
    inputSchema: { type: 'object' },
    outputSchema: {},
    requiredPermissions: [],
  };
  const doc = buildOpenApiDocument(planRoutes([...referenceContracts(), action]));
  const op = (method: string, path: string): Op | undefined => doc.paths[path]?.[method] as Op | undefined;

  it('is an optional header parameter of commands and POSTs, not of GET queries', async () => {
    expect(headerParams(op('post', '/api/users'))).to.deep.equal(['Idempotency-Key']);
    expect(headerParams(op('delete', '/api/users/{userId}'))).to.deep.equal(['Idempotency-Key']);
    expect(headerParams(op('post', '/api/actions'))).to.deep.equal(['Idempotency-Key']);
    expect(headerParams(op('get', '/api/users/{userId}'))).to.deep.equal([]);
    expect((await validateOpenApi(doc)).valid).to.equal(true);
  });

  it("its schema is the gateway's rule: a value up to 255 characters fits it exactly when the gateway takes it", () => {
    const schema = IDEMPOTENCY_KEY_PARAMETER.schema as { maxLength: number; pattern: string };
    const fits = (v: string) => v.length >= 1 && v.length <= schema.maxLength && new RegExp(schema.pattern).test(v);
    const values = [
      FRESH_IDEMPOTENCY_KEY,
      'x',
      'k'.repeat(255),
      'k'.repeat(256),
      '"quoted key"',
      '"a \\"b\\" \\\\"',
      `"${'k'.repeat(253)}"`,
      'a"b',
      '',
      '""',
      '"abc',
      'a b',
      'clé',
      '"a\\b"',
      '\u0001',
    ];
    for (const v of values) {
      const taken = parseIdempotencyKey(v) !== undefined;
      if (v.length <= 255) expect(fits(v), JSON.stringify(v)).to.equal(taken);
      else expect(fits(v), JSON.stringify(v)).to.equal(false);
    }
    expect(fits(FRESH_IDEMPOTENCY_KEY)).to.equal(true);
  });
});

describe("the docs page's Idempotency-Key", () => {
  it('replaces the example placeholder with a new key per request tried, and leaves a key typed in alone', () => {
    const window = { addEventListener: () => undefined };
    const interceptor = new Function('window', `${INIT_SCRIPT}; return freshIdempotencyKey;`)(window) as (r: {
      headers: Record<string, string>;
    }) => { headers: Record<string, string> };
    const first = interceptor({ headers: { 'Idempotency-Key': FRESH_IDEMPOTENCY_KEY } }).headers['Idempotency-Key'];
    const second = interceptor({ headers: { 'Idempotency-Key': FRESH_IDEMPOTENCY_KEY } }).headers['Idempotency-Key'];
    expect(first).to.match(/^[0-9a-f-]{32,36}$/);
    expect(second).to.not.equal(first);
    expect(interceptor({ headers: { 'Idempotency-Key': 'mine-1' } }).headers['Idempotency-Key']).to.equal('mine-1');
  });
});
