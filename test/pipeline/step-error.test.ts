import '../auth/support';
import { expect } from 'chai';
import type { Request, Response } from 'express';
import { answerStepError } from '../../plugin/pipeline/step-error';
import { GatewayError } from '../../plugin/errors/gateway-error';
import { fakeReq, run } from '../auth/support';

describe('answerStepError: the failure branch the policy steps share', () => {
  const logged: string[] = [];
  beforeEach(() => (logged.length = 0));

  const failed = answerStepError(
    { error: (m: string) => logged.push(m) },
    (err) => `the step broke: ${(err as Error).message}`,
  );
  const failing = (err: unknown) => (req: Request, res: Response) => failed(err, req, res);

  it('answers a GatewayError with its status and body, and logs nothing', async () => {
    const out = await run(failing(new GatewayError('HANDLER_NOT_FOUND', 'No handler for this route')), fakeReq());
    expect(out.next).to.equal(false);
    expect(out.status).to.equal(404);
    expect(out.body).to.include({ code: 'HANDLER_NOT_FOUND', message: 'No handler for this route' });
    expect(out.body.correlationId).to.be.a('string');
    expect(logged).to.deep.equal([]);
  });

  it("answers anything else 500 without its text, and logs it in the step's words with the correlation id", async () => {
    const out = await run(failing(new Error('secret /etc/path detail')), fakeReq());
    expect(out.status).to.equal(500);
    expect(out.body.code).to.equal('INTERNAL_ERROR');
    expect(JSON.stringify(out.body)).to.not.include('secret');
    expect(logged).to.deep.equal([`[${out.body.correlationId}] the step broke: secret /etc/path detail`]);
  });
});
