import { expect } from 'chai';
import type { Contract, JsonSchema } from '../../plugin/contracts/types';
import { compileSchema, type SchemaRole } from '../../plugin/validation/ajv';
import { ValidatorCache } from '../../plugin/validation/validator-cache';

function contract(messageType: string, inputSchema: JsonSchema): Contract {
  return { messageType, targetService: 'svc', inputSchema, outputSchema: { type: 'object' }, requiredPermissions: [] };
}

describe('validation: compiling per schema, in slices', () => {
  it('contracts with the same schema share one validator, whatever their message type', () => {
    let compiled = 0;
    const cache = new ValidatorCache({
      compile: (s: JsonSchema, r: SchemaRole) => {
        compiled += 1;
        return compileSchema(s, r);
      },
    });
    const schema = { type: 'object', properties: { n: { type: 'integer' } } };
    cache.sync(Array.from({ length: 50 }, (_, i) => contract(`Do${i}Command`, structuredClone(schema))));
    expect(compiled).to.equal(2);
    expect(cache.size).to.equal(2);
  });

  it('syncInSlices leaves the event loop free between compiles, and a request compiles what it needs first', async () => {
    let compiled = 0;
    const cache = new ValidatorCache({
      compile: (s: JsonSchema, r: SchemaRole) => {
        compiled += 1;
        return compileSchema(s, r);
      },
    });
    const contracts = Array.from({ length: 300 }, (_, i) =>
      contract(`Do${i}Command`, { type: 'object', properties: { [`f${i}`]: { type: 'string' } } }),
    );
    cache.syncInSlices(contracts);
    expect(compiled).to.equal(0);
    const v = cache.validator(contracts[7] as Contract, 'input');
    expect(v.ok && v.validate({ f7: 'x' }) && !v.validate({ f7: 1 })).to.equal(true);
    let turns = 0;
    while (cache.size < 301) {
      await new Promise((r) => setImmediate(r));
      turns += 1;
    }
    expect(compiled).to.equal(301);
    expect(turns, 'compiled in more than one turn of the event loop').to.be.above(1);
    // A newer set replaces what is left, and gone schemas are forgotten.
    cache.syncInSlices(contracts.slice(0, 2));
    expect(cache.size).to.equal(3);
    cache.stop();
  });
});
