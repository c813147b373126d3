import { expect } from 'chai';
import type { Request } from 'express';
import { checkAccess, checkContractAccess } from '../../plugin/auth/access-check';
import { runContext, requestContext } from '../../plugin/request/context';
import { GatewayError } from '../../plugin/errors/gateway-error';
import type { Contract } from '../../plugin/contracts/types';

const AUDIT: Contract = {
  messageType: 'AuditThingCommand',
  targetService: 'things',
  requiredPermissions: ['things:audit'],
  inputSchema: {},
  outputSchema: {},
};

/** A request inside the host: the host gives each pipeline run its own egContext. */
function hostRequest(): Request {
  return { method: 'GET', headers: {}, query: {}, egContext: {} } as unknown as Request;
}

function caller(req: Request, permissions: string[]): void {
  requestContext(req).caller = { userId: 'u', email: 'u@x', name: 'u', permissions };
}

function codeOf(fn: () => void): string | undefined {
  try {
    fn();
  } catch (err) {
    expect(err).to.be.instanceOf(GatewayError);
    return (err as GatewayError).code;
  }
  return undefined;
}

/**
 * One access decision per pipeline run, kept in the request's context: the permission step makes it, contract-router
 * reads it, and makes it itself (fail closed) when no step of the run did.
 */
describe('the access decision of a pipeline run', () => {
  it('no step decided (a hand-written pipeline without permission): the router refuses as the contract says', () => {
    const req = hostRequest();
    expect(codeOf(() => checkContractAccess(runContext(req), AUDIT))).to.equal('UNAUTHORIZED');
    caller(req, ['things:read']);
    expect(codeOf(() => checkContractAccess(runContext(req), AUDIT))).to.equal('INSUFFICIENT_PERMISSIONS');
    // A refusal decides nothing: the next check is made again, not skipped.
    expect(runContext(req).run.access).to.equal(undefined);
    caller(req, ['things:audit']);
    expect(codeOf(() => checkContractAccess(runContext(req), AUDIT))).to.equal(undefined);
    expect(runContext(req).run.access).to.deep.equal({ public: false, required: ['things:audit'] });
  });

  it("a decision made before in the run stands: the router reads it instead of the contract's permissions", () => {
    const req = hostRequest();
    caller(req, []);
    const rule = { public: false, required: [] };
    checkAccess(runContext(req), rule);
    expect(runContext(req).run.access).to.equal(rule);
    expect(codeOf(() => checkContractAccess(runContext(req), AUDIT))).to.equal(undefined);
  });

  it('a refused decision is not kept: the router still refuses the request', () => {
    const req = hostRequest();
    caller(req, []);
    expect(codeOf(() => checkAccess(runContext(req), { public: false, required: ['things:read'] }))).to.equal(
      'INSUFFICIENT_PERMISSIONS',
    );
    expect(codeOf(() => checkContractAccess(runContext(req), AUDIT))).to.equal('INSUFFICIENT_PERMISSIONS');
  });

  it('a decision of another pipeline run does not count: the host passed the request on to another endpoint', () => {
    const req = hostRequest();
    caller(req, []);
    checkAccess(runContext(req), { public: true, required: [] });
    (req as unknown as { egContext: object }).egContext = {};
    const next = runContext(req);
    expect(next.run.access).to.equal(undefined);
    // The caller is the request's, not the run's: known in the next run too, and still without the permission.
    expect(next.caller?.userId).to.equal('u');
    expect(codeOf(() => checkContractAccess(next, AUDIT))).to.equal('INSUFFICIENT_PERMISSIONS');
  });

  it('a public rule lets an anonymous caller on, and that is the decision of the run', () => {
    const req = hostRequest();
    checkAccess(runContext(req), { public: true, required: [] });
    expect(runContext(req).run.access?.public).to.equal(true);
    expect(codeOf(() => checkContractAccess(runContext(req), AUDIT))).to.equal(undefined);
  });
});
