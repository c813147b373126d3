import { expect } from 'chai';
import {
  breakingOf,
  classifyContractChange,
  classifyContractLists,
  type ContractChange,
} from '../../plugin/compat/classify';
import type { Contract, JsonSchema } from '../../plugin/contracts/types';

function contract(extra: Partial<Contract> = {}): Contract {
  return {
    messageType: 'GetUserQuery',
    targetService: 'users',
    inputSchema: { type: 'object', properties: { userId: { type: 'string' } }, required: ['userId'] },
    outputSchema: {
      type: 'object',
      properties: { name: { type: 'string', maxLength: 100 }, role: { enum: ['admin', 'user'] } },
      required: ['name'],
    },
    requiredPermissions: ['users:read'],
    ...extra,
  };
}

/** The (class, rule, at) of each change from the base contract to one with these schemas/fields. */
function changes(after: Partial<Contract>, before: Partial<Contract> = {}): Array<[string, string, string]> {
  return classifyContractChange(contract(before), contract(after)).map((c: ContractChange) => [c.class, c.rule, c.at]);
}

const baseOutput = contract().outputSchema;
const baseInput = contract().inputSchema;
function output(patch: (s: JsonSchema) => void): Partial<Contract> {
  const s = structuredClone(baseOutput);
  patch(s);
  return { outputSchema: s };
}
function input(patch: (s: JsonSchema) => void): Partial<Contract> {
  const s = structuredClone(baseInput);
  patch(s);
  return { inputSchema: s };
}
type Props = Record<string, Record<string, unknown>>;

describe('contract change classification', () => {
  it('finds nothing between identical contracts, key order aside, nor between {} and true', () => {
    expect(changes({ outputSchema: true as unknown as JsonSchema }, { outputSchema: {} })).to.deep.equal([]);
    const reordered = contract({
      outputSchema: {
        required: ['name'],
        properties: { role: { enum: ['admin', 'user'] }, name: { maxLength: 100, type: 'string' } },
        type: 'object',
      },
    });
    expect(classifyContractChange(contract(), reordered)).to.deep.equal([]);
  });

  describe('output (what clients read)', () => {
    it('an output property removed is breaking', () => {
      expect(changes(output((s) => delete (s.properties as Props).role))).to.deep.equal([
        ['breaking', 'output-property-removed', 'output.role'],
      ]);
    });

    it('an output property made optional is breaking', () => {
      expect(changes(output((s) => (s.required = [])))).to.deep.equal([
        ['breaking', 'output-property-optional', 'output.name'],
      ]);
    });

    it('an output type narrowed or changed is breaking', () => {
      expect(changes(output((s) => ((s.properties as Props).name = { type: 'integer' })))).to.deep.include([
        'breaking',
        'output-type-changed',
        'output.name',
      ]);
      const nullable = changes(
        output((s) => ((s.properties as Props).name!.type = ['string', 'null'])),
        output((s) => ((s.properties as Props).name!.type = 'string')),
      );
      expect(nullable).to.deep.equal([['breaking', 'output-type-changed', 'output.name']]);
    });

    it('an output enum value removed is breaking; one added is compatible', () => {
      expect(changes(output((s) => ((s.properties as Props).role = { enum: ['admin'] })))).to.deep.equal([
        ['breaking', 'output-enum-value-removed', 'output.role'],
      ]);
      expect(
        changes(output((s) => ((s.properties as Props).role = { enum: ['admin', 'user', 'guest'] }))),
      ).to.deep.equal([['compatible', 'output-enum-value-added', 'output.role']]);
    });

    it('an output maxLength lowered is breaking (narrowed); raised is compatible', () => {
      expect(changes(output((s) => ((s.properties as Props).name!.maxLength = 50)))).to.deep.equal([
        ['breaking', 'output-narrowed', 'output.name'],
      ]);
      expect(changes(output((s) => ((s.properties as Props).name!.maxLength = 500)))).to.deep.equal([
        ['compatible', 'output-widened', 'output.name'],
      ]);
    });

    it('an output property added, or made always present, is compatible', () => {
      expect(changes(output((s) => ((s.properties as Props).email = { type: 'string' })))).to.deep.equal([
        ['compatible', 'output-property-added', 'output.email'],
      ]);
      expect(changes(output((s) => (s.required = ['name', 'role'])))).to.deep.equal([
        ['compatible', 'output-property-required', 'output.role'],
      ]);
    });

    it('follows nested objects, arrays and local $refs', () => {
      const list = (item: JsonSchema): Partial<Contract> => ({
        outputSchema: {
          type: 'object',
          properties: { items: { type: 'array', items: { $ref: '#/$defs/user' } } },
          $defs: { user: item },
        },
      });
      const before = list({
        type: 'object',
        properties: { id: { type: 'string' }, tags: { type: 'array', items: { type: 'string' } } },
      });
      const after = list({
        type: 'object',
        properties: { id: { type: 'string' }, tags: { type: 'array', items: { type: 'integer' } } },
      });
      expect(changes(after, before)).to.deep.equal([['breaking', 'output-type-changed', 'output.items[].tags[]']]);
    });

    it('ends on a recursive schema', () => {
      const tree = (leaf: string): Partial<Contract> => ({
        outputSchema: {
          $ref: '#/$defs/node',
          $defs: {
            node: {
              type: 'object',
              properties: { leaf: { type: leaf }, children: { type: 'array', items: { $ref: '#/$defs/node' } } },
            },
          },
        },
      });
      expect(changes(tree('integer'), tree('string'))).to.deep.equal([
        ['breaking', 'output-type-changed', 'output.leaf'],
      ]);
    });
  });

  describe('input (what clients send)', () => {
    it('an input property newly required is breaking; made optional is compatible', () => {
      const withEmail = input((s) => ((s.properties as Props).email = { type: 'string' }));
      const requiredEmail = input((s) => {
        (s.properties as Props).email = { type: 'string' };
        s.required = ['userId', 'email'];
      });
      expect(changes(requiredEmail, withEmail)).to.deep.equal([['breaking', 'input-property-required', 'input.email']]);
      expect(changes(withEmail, requiredEmail)).to.deep.equal([
        ['compatible', 'input-property-optional', 'input.email'],
      ]);
    });

    it('an input type narrowed is breaking; widened is compatible', () => {
      const either = input((s) => ((s.properties as Props).userId = { type: ['string', 'integer'] }));
      expect(changes({}, either)).to.deep.equal([['breaking', 'input-type-narrowed', 'input.userId']]);
      expect(changes(either)).to.deep.equal([['compatible', 'input-type-widened', 'input.userId']]);
      // integer is within number: number → integer narrows, integer → number widens.
      const num = input((s) => ((s.properties as Props).userId = { type: 'number' }));
      const int = input((s) => ((s.properties as Props).userId = { type: 'integer' }));
      expect(changes(int, num)[0]).to.deep.equal(['breaking', 'input-type-narrowed', 'input.userId']);
      expect(changes(num, int)[0]).to.deep.equal(['compatible', 'input-type-widened', 'input.userId']);
    });

    it('an input constraint narrowed is breaking: maxLength lowered, minimum raised, a pattern added', () => {
      const bounded = input((s) => ((s.properties as Props).userId = { type: 'string', maxLength: 36, minLength: 1 }));
      expect(
        changes(
          input((s) => ((s.properties as Props).userId = { type: 'string', maxLength: 10, minLength: 1 })),
          bounded,
        ),
      ).to.deep.equal([['breaking', 'input-narrowed', 'input.userId']]);
      expect(
        changes(
          input((s) => ((s.properties as Props).userId = { type: 'string', maxLength: 36, minLength: 5 })),
          bounded,
        ),
      ).to.deep.equal([['breaking', 'input-narrowed', 'input.userId']]);
      expect(changes(input((s) => ((s.properties as Props).userId = { type: 'string', pattern: '^u' })))).to.deep.equal(
        [['breaking', 'input-narrowed', 'input.userId']],
      );
      expect(changes({}, bounded)).to.deep.equal([
        ['compatible', 'input-widened', 'input.userId'],
        ['compatible', 'input-widened', 'input.userId'],
      ]);
    });

    it('an input enum value removed is breaking; an enum imposed is breaking; one lifted is compatible', () => {
      const roles = (values: string[]): Partial<Contract> =>
        input((s) => ((s.properties as Props).role = { enum: values }));
      expect(changes(roles(['a']), roles(['a', 'b']))).to.deep.equal([
        ['breaking', 'input-enum-value-removed', 'input.role'],
      ]);
      expect(changes(roles(['a', 'b', 'c']), roles(['a', 'b']))).to.deep.equal([
        ['compatible', 'input-enum-value-added', 'input.role'],
      ]);
      expect(changes(input((s) => ((s.properties as Props).userId = { type: 'string', enum: ['x'] })))).to.deep.equal([
        ['breaking', 'input-enum-added', 'input.userId'],
      ]);
    });

    it('additional properties refused now is breaking; an input property removed is breaking only then', () => {
      expect(changes(input((s) => (s.additionalProperties = false)))).to.deep.equal([
        ['breaking', 'input-narrowed', 'input'],
      ]);
      const open = {
        inputSchema: { type: 'object', properties: { userId: { type: 'string' }, note: { type: 'string' } } },
      };
      expect(
        changes({ inputSchema: { type: 'object', properties: { userId: { type: 'string' } } } }, open),
      ).to.deep.equal([['compatible', 'input-property-removed', 'input.note']]);
      expect(
        changes(
          { inputSchema: { type: 'object', properties: { userId: { type: 'string' } }, additionalProperties: false } },
          { inputSchema: { ...open.inputSchema, additionalProperties: false } },
        ),
      ).to.deep.equal([['breaking', 'input-property-removed', 'input.note']]);
    });

    it('a combinator it does not analyse is reported as breaking when it changes', () => {
      const any = (branches: JsonSchema[]): Partial<Contract> => ({ inputSchema: { anyOf: branches } });
      expect(changes(any([{ type: 'string' }]), any([{ type: 'string' }, { type: 'integer' }]))).to.deep.equal([
        ['breaking', 'schema-changed', 'input'],
      ]);
    });
  });

  describe('routes and access', () => {
    it('a route removed is breaking; one added is compatible', () => {
      const at = (paths: string[]): Partial<Contract> => ({
        messageType: 'ArchiveUser',
        http: { method: 'POST', paths },
      });
      expect(
        changes(at(['/api/users/:userId/archive']), at(['/api/users/:userId/archive', '/api/archive/:userId'])),
      ).to.deep.equal([['breaking', 'route-removed', 'POST /api/archive/:userId']]);
      expect(changes(at(['/api/users/:userId/archive', '/api/x']), at(['/api/users/:userId/archive']))).to.deep.equal([
        ['compatible', 'route-added', 'POST /api/x'],
      ]);
    });

    it('a permission added is breaking; one removed is compatible', () => {
      expect(changes({ requiredPermissions: ['users:read', 'users:admin'] })).to.deep.equal([
        ['breaking', 'permission-added', 'users:admin'],
      ]);
      expect(changes({ requiredPermissions: [] })).to.deep.equal([['compatible', 'permission-removed', 'users:read']]);
    });

    it('a public contract that needs a token now is breaking', () => {
      expect(changes({}, { public: true })).to.deep.equal([['breaking', 'public-removed', 'public']]);
      expect(changes({ public: true })).to.deep.equal([['compatible', 'public-added', 'public']]);
    });

    it('deprecating a contract is compatible', () => {
      expect(changes({ deprecated: true, sunset: '2030-01-01' })).to.deep.equal([
        ['compatible', 'deprecated', 'deprecated'],
      ]);
    });
  });

  describe('lists of contracts', () => {
    it('a contract removed from the list is breaking, one added is compatible, changes in between are classified', () => {
      const list = classifyContractLists(
        [contract(), contract({ messageType: 'DeleteUserCommand' })],
        [contract({ requiredPermissions: ['users:read', 'x'] }), contract({ messageType: 'CreateUserCommand' })],
      );
      expect(list.map((c) => [c.messageType, c.class, c.rule])).to.deep.equal([
        ['GetUserQuery', 'breaking', 'permission-added'],
        ['DeleteUserCommand', 'breaking', 'contract-removed'],
        ['CreateUserCommand', 'compatible', 'contract-added'],
      ]);
      expect(breakingOf(list)).to.have.length(2);
    });
  });
});
