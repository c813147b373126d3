import { expect } from 'chai';
import type { Runtime } from '../../plugin/runtime';
import type { Contract } from '../../plugin/contracts/types';
import type { Logger } from '../../plugin/logger';
import { CHECK_UNTIL_PASSED, responseJson } from '../../plugin/validation/output';
import { replyLocation } from '../../policies/contract-router/reply-checks';
import { testRuntime } from '../support/runtime';

function capture(): Logger & { lines: string[] } {
  const lines: string[] = [];
  return { lines, debug: () => undefined, info: () => undefined, warn: (m) => lines.push(m), error: () => undefined };
}

/** The output check's lines (a test runtime logs other things too, such as where first-use pins are kept). */
const mismatches = (log: { lines: string[] }) => log.lines.filter((l) => l.includes('does not match its outputSchema'));

const contract: Contract = {
  messageType: 'CreateWidgetCommand',
  targetService: 'widgets-service',
  inputSchema: { type: 'object' },
  outputSchema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
  requiredPermissions: [],
};

describe('per-runtime state: two runtimes in one process share nothing contract-router remembers', () => {
  const logs = { a: capture(), b: capture() };
  let a: Runtime;
  let b: Runtime;

  before(() => {
    a = testRuntime({}, logs.a);
    b = testRuntime({}, logs.b);
  });

  after(async () => {
    await a.close();
    await b.close();
  });

  it('each owns its own output sampling, reply warnings and success statuses', () => {
    expect(a.services.outputSamples).not.to.equal(b.services.outputSamples);
    expect(a.services.replyWarnings).not.to.equal(b.services.replyWarnings);
    expect(a.services.successStatuses).not.to.equal(b.services.successStatuses);
    expect(a.services.successStatuses.of(contract.messageType, 'POST')).to.equal(201);
    expect(b.services.successStatuses.of(contract.messageType, 'POST')).to.equal(201);
  });

  it('replies that matched in one runtime do not make the other sample: it still checks every reply', () => {
    for (let i = 0; i < CHECK_UNTIL_PASSED; i++)
      responseJson(a.services, contract, () => ({ id: 'ok' }), '{"id":"ok"}', 'g');
    // The next reply in `a` is not sampled (bench/REPORT.md): its bytes go out unchecked, nothing is logged.
    expect(responseJson(a.services, contract, () => ({ id: 5 }), '{"id":5}', 'in-a')).to.equal('{"id":5}');
    expect(mismatches(logs.a)).to.deep.equal([]);
    expect(responseJson(b.services, contract, () => ({ id: 5 }), '{"id":5}', 'in-b')).to.equal('{"id":5}');
    expect(mismatches(logs.b)).to.have.length(1);
    expect(mismatches(logs.b)[0]).to.contain('[in-b]');
  });

  it('a reply problem logged once by one runtime is still logged by the other', () => {
    replyLocation('/api/../evil', contract, a.services);
    replyLocation('/api/../evil', contract, a.services);
    replyLocation('/api/../evil', contract, b.services);
    expect(logs.a.lines.filter((l) => l.includes('location'))).to.have.length(1);
    expect(logs.b.lines.filter((l) => l.includes('location'))).to.have.length(1);
  });
});
