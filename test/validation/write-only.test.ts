import { expect } from 'chai';
import { stripWriteOnly } from '../../plugin/validation/write-only';
import { userWithWriteOnly } from './fixtures';

const user = userWithWriteOnly;

describe('validation: writeOnly stripping', () => {
  it('drops writeOnly properties at every described depth and leaves the rest', () => {
    const result = {
      id: 'u1',
      password: 'secret',
      profile: { firstName: 'Ada', pin: '1234' },
      other: { password: 'kept: not described' },
    };
    expect(stripWriteOnly(result, user)).to.deep.equal({
      id: 'u1',
      profile: { firstName: 'Ada' },
      other: { password: 'kept: not described' },
    });
  });

  it('strips inside arrays of a list envelope, through $ref and $defs', () => {
    const envelope = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: { users: { type: 'array', items: { $ref: '#/$defs/user' } }, page: { type: 'integer' } },
      $defs: { user },
    };
    const result = {
      users: [
        { id: 'a', password: 'x' },
        { id: 'b', password: 'y', profile: { pin: '0' } },
      ],
      page: 1,
    };
    expect(stripWriteOnly(result, envelope)).to.deep.equal({ users: [{ id: 'a' }, { id: 'b', profile: {} }], page: 1 });
  });

  it('follows draft-07 definitions, allOf, additionalProperties, patternProperties and tuples', () => {
    const schema = {
      definitions: { secret: { type: 'string', writeOnly: true } },
      allOf: [{ properties: { token: { $ref: '#/definitions/secret' } } }],
      properties: {
        map: { type: 'object', additionalProperties: { properties: { key: { writeOnly: true } } } },
        pair: { items: [{}, { properties: { s: { writeOnly: true } } }] },
      },
      patternProperties: { '^x-': { writeOnly: true } },
    };
    const result = {
      token: 't',
      'x-internal': 1,
      keep: 2,
      map: { a: { key: 'k', v: 1 } },
      pair: [{ s: 1 }, { s: 2, t: 3 }],
    };
    expect(stripWriteOnly(result, schema)).to.deep.equal({ keep: 2, map: { a: { v: 1 } }, pair: [{ s: 1 }, { t: 3 }] });
  });

  it('never modifies the service’s object and returns it as is when nothing is stripped', () => {
    const result = { id: 'u1', password: 'secret', profile: { firstName: 'Ada', pin: '1' } };
    const copy = structuredClone(result);
    stripWriteOnly(result, user);
    expect(result).to.deep.equal(copy);
    const clean = { id: 'u1', profile: { firstName: 'Ada' } };
    expect(stripWriteOnly(clean, user)).to.equal(clean);
  });

  it('survives recursive schemas', () => {
    const tree = {
      $ref: '#/$defs/node',
      $defs: { node: { properties: { secret: { writeOnly: true }, children: { items: { $ref: '#/$defs/node' } } } } },
    };
    const result = { secret: 1, children: [{ secret: 2, children: [{ secret: 3, name: 'leaf' }] }] };
    expect(stripWriteOnly(result, tree)).to.deep.equal({ children: [{ children: [{ name: 'leaf' }] }] });
    const loop = { $ref: '#/$defs/a', $defs: { a: { $ref: '#/$defs/b' }, b: { $ref: '#/$defs/a' } } };
    expect(stripWriteOnly({ x: 1 }, loop)).to.deep.equal({ x: 1 });
  });
});
