import { expect } from 'chai';
import type { Request, Response } from 'express';
import type { Contract } from '../../plugin/contracts/types';
import { schemaValidationPolicy } from '../../policies/schema-validation';
import { contractOf } from '../../plugin/pipeline/resolve-contract';
import { inputOf } from '../../plugin/pipeline/message-input';
import { runContext } from '../../plugin/request/context';
import type { Runtime } from '../../plugin/runtime';
import { testRuntime } from '../support/runtime';

/** A runtime of the suite's own, these contracts in its registry, its warnings and errors kept. */
function runtimeWith(contracts: Contract[]) {
  const logged: string[] = [];
  const log = {
    debug: () => undefined,
    info: () => undefined,
    warn: (m: string) => logged.push(m),
    error: (m: string) => logged.push(m),
  };
  const runtime = testRuntime({}, log);
  runtime.discovery.registry.apply({ service: 'svc', instanceId: 'i1', ttlMs: 60000, contracts });
  return { logged, runtime };
}

function fakeExchange(query: Record<string, unknown> = {}) {
  const req = { method: 'GET', headers: {}, query, params: {} } as unknown as Request;
  const sent: { status?: number; body?: string; headers: Record<string, string> } = { headers: {} };
  let answered!: () => void;
  const ended = new Promise<void>((resolve) => (answered = resolve));
  const res = {
    headersSent: false,
    setHeader(name: string, value: string) {
      sent.headers[name.toLowerCase()] = value;
      return this;
    },
    status(code: number) {
      sent.status = code;
      return this;
    },
    set statusCode(code: number) {
      sent.status = code;
    },
    get statusCode() {
      return sent.status ?? 200;
    },
    end(body?: string) {
      sent.body = body;
      answered();
    },
  } as unknown as Response;
  return { req, res, sent, ended };
}

const good: Contract = {
  messageType: 'ListThingsQuery',
  targetService: 'svc',
  requiredPermissions: [],
  inputSchema: { type: 'object', properties: { page: { type: 'integer', minimum: 1, default: 1 } } },
  outputSchema: { type: 'object' },
};
const bad: Contract = {
  messageType: 'ListBrokenThingsQuery',
  targetService: 'svc',
  requiredPermissions: [],
  inputSchema: { type: 'object', properties: { page: { type: 'integr' } } },
  outputSchema: { type: 'object' },
};

describe('validation: the schema-validation policy', () => {
  let fake: { logged: string[]; runtime: Runtime };

  before(() => {
    fake = runtimeWith([good, bad]);
  });
  after(() => fake.runtime.close());

  async function run(messageType: string, query: Record<string, unknown>) {
    const handler = schemaValidationPolicy(fake.runtime.services).policy({ messageType });
    const ex = fakeExchange(query);
    let nextCalled = false;
    // The step settles by calling next() or answering, at once or later (a body to read): wait for either.
    await Promise.race([
      ex.ended,
      new Promise<void>((resolve) =>
        handler(ex.req, ex.res, () => {
          nextCalled = true;
          resolve();
        }),
      ),
    ]);
    return { ...ex, nextCalled };
  }

  it('reports a contract whose schema does not compile when the policy is built, and answers 500 without the ajv text', async () => {
    const { sent, nextCalled } = await run(bad.messageType, {});
    expect(fake.logged.join('\n')).to.contain('ListBrokenThingsQuery: its inputSchema does not compile');
    expect(nextCalled).to.equal(false);
    expect(sent.status).to.equal(500);
    const body = JSON.parse(sent.body!);
    expect(body).to.include({ code: 'INTERNAL_ERROR', error: 'Internal Server Error' });
    expect(body.correlationId).to.equal(sent.headers['x-correlation-id']);
    expect(sent.body).not.to.match(/integr|schema is invalid|allowed values/);
  });

  it('fills defaults into the input the router will send, and lets valid input through', async () => {
    const { req, nextCalled } = await run(good.messageType, {});
    expect(nextCalled).to.equal(true);
    const ctx = runContext(req);
    const input = inputOf(ctx, req, contractOf(ctx, req, { messageType: good.messageType }, fake.runtime.services));
    expect(input).to.deep.equal({ page: 1 });
  });

  it('answers 400 in the error body for invalid input', async () => {
    const { sent, nextCalled } = await run(good.messageType, { page: '0' });
    expect(nextCalled).to.equal(false);
    expect(sent.status).to.equal(400);
    expect(JSON.parse(sent.body!)).to.deep.include({
      code: 'VALIDATION_ERROR',
      details: { page: 'must be greater than or equal to 1' },
      validationErrors: [{ field: 'page', message: 'must be greater than or equal to 1' }],
    });
  });
});
