import { expect } from 'chai';
import { ContractRegistry } from '../../plugin/contracts/registry';
import { DEFAULT_ANNOUNCEMENT_LIMITS, schemaOverLimits, schemaReferenceProblem } from '../../plugin/contracts/limits';
import type { AnnouncementLimits } from '../../plugin/contracts/limits';
import type { Announcement, Contract } from '../../plugin/contracts/types';

function contract(
  messageType: string,
  targetService: string,
  inputSchema: Record<string, unknown> = { type: 'object' },
): Contract {
  return { messageType, targetService, inputSchema, outputSchema: {}, requiredPermissions: [] };
}

function announce(service: string, instanceId: string, contracts: Contract[]): Announcement {
  return { service, instanceId, contracts, ttlMs: 10_000 };
}

function nested(depth: number): Record<string, unknown> {
  let schema: Record<string, unknown> = { type: 'string' };
  for (let i = 1; i < depth; i += 1) schema = { type: 'object', properties: { a: schema } };
  return schema;
}

function wide(members: number): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  for (let i = 0; i < members; i += 1) properties[`p${i}`] = { type: 'string' };
  return { type: 'object', properties };
}

function setup(limits: Partial<AnnouncementLimits> = {}) {
  let now = 1_000;
  const warnings: string[] = [];
  const registry = new ContractRegistry({ now: () => now, logger: { warn: (m) => warnings.push(m) }, limits });
  const changes: number[] = [];
  registry.on('change', (c) => changes.push(c.length));
  return { registry, warnings, changes, tick: (ms: number) => (now += ms) };
}

describe('announcement limits', () => {
  const limits = DEFAULT_ANNOUNCEMENT_LIMITS;

  it('measures a schema by depth, members (at every depth) and bytes', () => {
    expect(schemaOverLimits(nested(10), limits)).to.equal(undefined);
    // nested(n) has 2n-1 levels of objects: each level is a schema plus its properties object.
    expect(schemaOverLimits(nested(17), limits)).to.equal(`nests deeper than 32 levels (schemaMaxDepth)`);
    // wide(n): type and properties, n properties, and each one's type: 2 + 2n members.
    expect(schemaOverLimits(wide(1999), limits)).to.equal(undefined);
    expect(schemaOverLimits(wide(2000), limits)).to.equal('has more than 4000 members (schemaMaxProperties)');
    expect(schemaOverLimits({ description: 'x'.repeat(70_000) }, limits)).to.match(
      /^is 70\d\d\d bytes, over 65536 \(schemaMaxBytes\)$/,
    );
    expect(schemaOverLimits({ enum: new Array(4001).fill(1) }, limits)).to.equal(
      'has more than 4000 members (schemaMaxProperties)',
    );
  });

  it('stops early on a schema a million levels deep, without recursion', () => {
    let deep: unknown = {};
    for (let i = 0; i < 1_000_000; i += 1) deep = { a: deep };
    expect(schemaOverLimits(deep, limits)).to.equal('nests deeper than 32 levels (schemaMaxDepth)');
  });

  const refused: Array<[string, Announcement, string]> = [
    [
      'a deep inputSchema',
      announce('svc', 'i1', [contract('DoCommand', 'svc', nested(40))]),
      'contracts[0] inputSchema nests deeper than 32 levels (schemaMaxDepth)',
    ],
    [
      'a wide inputSchema (13,400 properties)',
      announce('svc', 'i1', [contract('DoCommand', 'svc', wide(13_400))]),
      'contracts[0] inputSchema has more than 4000 members (schemaMaxProperties)',
    ],
    [
      'too many contracts',
      announce(
        'svc',
        'i1',
        Array.from({ length: 201 }, (_, i) => contract(`Do${i}Command`, 'svc')),
      ),
      'more than 200 contracts (announcementMaxContracts)',
    ],
  ];
  for (const [label, announcement, reason] of refused) {
    it(`refuses ${label}: logged once with service, instance and limit, and nothing changes`, () => {
      const { registry, warnings, changes } = setup();
      registry.apply(announce('svc', 'i1', [contract('KeepQuery', 'svc')]));
      for (let i = 0; i < 3; i += 1)
        expect(registry.apply(announcement)).to.deep.equal({ accepted: false, changed: false, reason });
      expect(registry.contracts().map((c) => c.messageType)).to.deep.equal(['KeepQuery']);
      expect(registry.instances()).to.have.length(1);
      expect(changes).to.deep.equal([1]);
      expect(warnings).to.deep.equal([
        `contract registry: refused announcement from service svc instance i1: ${reason}`,
      ]);
    });
  }

  it('each limit is a setting', () => {
    const { registry } = setup({
      maxSchemaDepth: 50,
      maxSchemaProperties: 30_000,
      maxContracts: 300,
      maxSchemaBytes: 1024 * 1024,
    });
    expect(registry.apply(announce('svc', 'i1', [contract('DoCommand', 'svc', nested(20))])).accepted).to.equal(true);
    expect(registry.apply(announce('svc', 'i1', [contract('DoCommand', 'svc', wide(13_400))])).accepted).to.equal(true);
  });

  it('refuses a service beyond announcedServicesMax until one goes', () => {
    const { registry } = setup({ maxServices: 2 });
    registry.apply(announce('a', 'a1', [contract('ACommand', 'a')]));
    registry.apply(announce('b', 'b1', [contract('BCommand', 'b')]));
    expect(registry.apply(announce('c', 'c1', [contract('CCommand', 'c')]))).to.deep.equal({
      accepted: false,
      changed: false,
      reason: 'more than 2 services (announcedServicesMax)',
    });
    expect(registry.apply(announce('a', 'a2', [contract('ACommand', 'a')])).accepted).to.equal(true); // a known service
    registry.apply({ service: 'b', instanceId: 'b1', withdrawn: true });
    expect(registry.apply(announce('c', 'c1', [contract('CCommand', 'c')])).accepted).to.equal(true);
  });

  it('keeps at most serviceMaxInstances instances of a service, dropping the one heard from longest ago', () => {
    const { registry, tick, warnings } = setup({ maxInstancesPerService: 3 });
    for (const id of ['i1', 'i2', 'i3']) {
      registry.apply(announce('svc', id, [contract('DoCommand', 'svc')]));
      tick(10);
    }
    registry.apply(announce('svc', 'i1', [contract('DoCommand', 'svc')])); // i1 is fresh again: i2 is now the stalest
    for (const id of ['i4', 'i5']) {
      tick(10);
      registry.apply(announce('svc', id, [contract('DoCommand', 'svc')]));
    }
    expect(registry.instances().map((i) => i.instanceId)).to.deep.equal(['i1', 'i4', 'i5']);
    expect(warnings.filter((w) => w.includes('more than 3 instances'))).to.have.length(1);
  });

  describe('references outside the schema', () => {
    it('allows references within the schema (#/…, #name anchors) and a root $id', () => {
      const local = {
        $id: 'https://example.com/order.json',
        type: 'object',
        properties: {
          a: { $ref: '#/definitions/a' },
          b: { $ref: '#item' },
          c: { $dynamicRef: '#node' },
          d: { $recursiveRef: '#' },
        },
        definitions: { a: { type: 'string' }, item: { $id: '#item', type: 'integer' } },
      };
      expect(schemaReferenceProblem(local)).to.equal(undefined);
      // A property named $ref or $id is a name, not a keyword.
      expect(
        schemaReferenceProblem({ type: 'object', properties: { $ref: { type: 'string' }, $id: { type: 'string' } } }),
      ).to.equal(undefined);
    });

    for (const [label, schema, problem] of [
      [
        'an absolute $ref',
        { properties: { a: { $ref: 'https://evil.example/a.json' } } },
        'has $ref "https://evil.example/a.json" outside the schema',
      ],
      [
        'a relative $ref (resolved against the root $id)',
        { $id: 'https://evil.example/root.json', properties: { a: { $ref: 'other.json#/x' } } },
        'has $ref "other.json#/x" outside',
      ],
      [
        'a protocol-relative $ref in an array of schemas',
        { anyOf: [{ type: 'string' }, { $ref: '//evil.example/x' }] },
        'has $ref "//evil.example/x" outside',
      ],
      [
        'a $dynamicRef to a URL',
        { $dynamicRef: 'https://evil.example/meta#node' },
        'has $dynamicRef "https://evil.example/meta#node"',
      ],
      [
        'a $ref in an example (a reader may follow it)',
        { type: 'object', examples: [{ $ref: 'https://evil.example/e' }] },
        'has $ref "https://evil.example/e"',
      ],
      [
        'a $id below the root',
        { properties: { a: { $id: 'https://evil.example/a', $ref: '#/definitions/q' } } },
        'has a $id below its root ("https://evil.example/a")',
      ],
    ] as Array<[string, Record<string, unknown>, string]>) {
      it(`refuses ${label}`, () => {
        expect(schemaReferenceProblem(schema)).to.be.a('string').that.includes(problem);
      });
    }

    it("refuses such a contract alone, listed and logged once like other refusals, and serves the service's others", () => {
      const { registry, warnings } = setup();
      const remote = {
        messageType: 'CreateOrderCommand',
        targetService: 'orders',
        inputSchema: { type: 'object', properties: { a: { $ref: 'https://evil.example/a.json' } } },
        outputSchema: {},
        requiredPermissions: [],
      };
      const fine = contract('GetOrderQuery', 'orders');
      expect(registry.apply(announce('orders', 'o1', [remote, fine])).accepted).to.equal(true);
      registry.apply(announce('orders', 'o1', [remote, fine]));
      expect(registry.contracts().map((c) => c.messageType)).to.deep.equal(['GetOrderQuery']);
      expect(registry.refusals()).to.deep.equal([
        {
          service: 'orders',
          messageType: 'CreateOrderCommand',
          reason:
            'inputSchema has $ref "https://evil.example/a.json" outside the schema (only #… references are allowed)',
        },
      ]);
      expect(warnings.filter((w) => w.includes('refused CreateOrderCommand'))).to.have.length(1);
      expect(registry.get('CreateOrderCommand')).to.equal(undefined);
    });
  });
});
