import { expect } from 'chai';
import { answer, operation, serve } from '../../sdk';
import { InProcessHub } from '../../plugin/bus/inprocess/hub';
import { InProcessTransport } from '../../plugin/bus/inprocess';

/** The contract the typed handlers below are written against; its schemas keep their literal types. */
const getProduct = {
  messageType: 'GetProductQuery',
  inputSchema: {
    type: 'object',
    properties: { productId: { type: 'string' }, limit: { type: 'integer' } },
    required: ['productId'],
  },
  outputSchema: {
    type: 'object',
    properties: { productId: { type: 'string' }, name: { type: 'string' } },
    required: ['productId', 'name'],
  },
  requiredPermissions: ['products:read'],
} as const;

describe("operation(): handlers typed from the contract's JSON Schemas", () => {
  it('types the input and the output from the schemas (compile-time checks) and serves like a plain operation', async () => {
    const op = operation(getProduct).handle((input) => {
      const id: string = input.productId;
      const limit: number | undefined = input.limit;
      // @ts-expect-error productId is a string, not a number
      const wrong: number = input.productId;
      void wrong;
      return { productId: id, name: `Product ${id}${limit ?? ''}` };
    });
    // @ts-expect-error the output schema requires name
    operation(getProduct).handle((input) => ({ productId: input.productId }));
    // @ts-expect-error name is a string
    operation(getProduct).handle((input) => ({ productId: input.productId, name: 7 }));
    operation(getProduct).handle(async (input) => answer({ productId: input.productId, name: 'n' }, { status: 201 }));

    expect(op.contract).to.deep.include({ messageType: 'GetProductQuery', requiredPermissions: ['products:read'] });
    expect(op.contract.inputSchema).to.deep.equal(getProduct.inputSchema);
    const transport = new InProcessTransport(new InProcessHub());
    await transport.start();
    const running = await serve({ transport, service: 'catalog', operations: [op] });
    try {
      const reply = await transport.request(
        {
          messageType: 'GetProductQuery',
          targetService: 'catalog',
          input: { productId: 'p1' },
          headers: { correlationId: 'c', requestId: 'r' },
        },
        2000,
      );
      expect(reply).to.deep.equal({ ok: true, result: { productId: 'p1', name: 'Product p1' } });
    } finally {
      await running.stop();
      await transport.close();
    }
  });
});

describe('serve(): a request past its deadline', () => {
  it('runs no handler and answers REQUEST_TIMEOUT (the gateway has already answered 504)', async () => {
    let ran = 0;
    const transport = new InProcessTransport(new InProcessHub());
    await transport.start();
    const running = await serve({
      transport,
      service: 'late',
      operations: [
        {
          contract: { messageType: 'DoThingCommand', inputSchema: {}, outputSchema: {}, requiredPermissions: [] },
          handle: () => ++ran,
        },
      ],
    });
    try {
      const request = (deadline: number) =>
        transport.request(
          {
            messageType: 'DoThingCommand',
            targetService: 'late',
            input: {},
            headers: { correlationId: 'c', requestId: 'r', deadline },
          },
          2000,
        );
      expect(await request(Date.now() - 1)).to.deep.include({ ok: false });
      expect((await request(Date.now() - 1)) as { error?: { code: string } }).to.have.nested.property(
        'error.code',
        'REQUEST_TIMEOUT',
      );
      expect(ran).to.equal(0);
      expect(await request(Date.now() + 5000)).to.deep.equal({ ok: true, result: 1 });
    } finally {
      await running.stop();
      await transport.close();
    }
  });
});
