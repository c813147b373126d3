import { expect } from 'chai';
import { buildInput } from '../../plugin/request/input';
import { GatewayError } from '../../plugin/errors/gateway-error';

const schema = {
  type: 'object',
  properties: {
    page: { type: 'integer' },
    price: { type: 'number' },
    active: { type: 'boolean' },
    tags: { type: 'array', items: { type: 'string' } },
    ids: { type: 'array', items: { type: 'integer' } },
    userId: { type: 'string' },
    code: { type: 'string' },
  },
};

describe('message input', () => {
  it('coerces query values by the schema', () => {
    const input = buildInput({
      body: {},
      params: {},
      schema,
      query: { page: '2', price: '9.5', active: 'true', code: '007', tags: 'a,b', ids: ['1', '2'] },
    });
    expect(input).to.deep.equal({ page: 2, price: 9.5, active: true, code: '007', tags: ['a', 'b'], ids: [1, 2] });
  });

  it('turns numeric-looking query values into numbers when there is no schema', () => {
    expect(buildInput({ body: {}, params: {}, query: { page: '3', q: 'abc', n: '-1.5' } })).to.deep.equal({
      page: 3,
      q: 'abc',
      n: -1.5,
    });
  });

  it('keeps strings the schema declares as strings', () => {
    expect(buildInput({ body: {}, params: { userId: '42' }, query: {}, schema })).to.deep.equal({ userId: '42' });
  });

  it('passes path parameters as input fields, over the query', () => {
    expect(
      buildInput({ body: { name: 'x' }, params: { userId: 'u1' }, query: { userId: 'u2' }, schema }),
    ).to.deep.equal({ name: 'x', userId: 'u1' });
  });

  it('refuses a body field that contradicts the path', () => {
    expect(() => buildInput({ body: { userId: 'other' }, params: { userId: 'u1' }, query: {}, schema }))
      .to.throw(GatewayError)
      .with.property('code', 'VALIDATION_ERROR');
    expect(buildInput({ body: { userId: 'u1' }, params: { userId: 'u1' }, query: {}, schema })).to.deep.equal({
      userId: 'u1',
    });
  });

  it('drops prototype-polluting keys at any depth', () => {
    const body = JSON.parse('{"__proto__":{"polluted":1},"a":{"constructor":{"prototype":{"x":1}},"b":1}}');
    const input = buildInput({ body, params: {}, query: {} });
    expect(input).to.deep.equal({ a: { b: 1 } });
    expect(({} as Record<string, unknown>).polluted).to.equal(undefined);
  });
});

describe('request ids', () => {
  it('are unique within a process and carry a random per-process part', () => {
    const { newId } = require('../../plugin/request/ids') as typeof import('../../plugin/request/ids');
    const ids = new Set(Array.from({ length: 10000 }, () => newId()));
    expect(ids.size).to.equal(10000);
    const [part] = [...ids][0]!.split('-');
    expect(part).to.match(/^[0-9a-f]{16}$/);
    for (const id of ids) expect(id).to.match(/^[A-Za-z0-9._:-]{1,128}$/, 'usable as a caller correlation id too');
  });
});
