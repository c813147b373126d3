import { expect } from 'chai';
import type { Contract } from '../../plugin/contracts/types';
import {
  checkOutput,
  CHECK_UNTIL_PASSED,
  OutputSamples,
  responseJson,
  SAMPLE_EVERY,
} from '../../plugin/validation/output';
import { ValidatorCache } from '../../plugin/validation/validator-cache';
import { GatewayError } from '../../plugin/errors/gateway-error';
import { toErrorBody } from '../../plugin/errors/error-body';
import { resolveSettings } from '../../plugin/settings';

const contract: Contract = {
  messageType: 'GetThingQuery',
  targetService: 'things-service',
  inputSchema: { type: 'object' },
  outputSchema: {
    type: 'object',
    properties: { id: { type: 'string' }, secret: { type: 'string', writeOnly: true } },
    required: ['id'],
  },
  requiredPermissions: [],
};

function logger() {
  const lines: string[] = [];
  const log = {
    debug: () => undefined,
    info: () => undefined,
    warn: (m: string) => lines.push(m),
    error: (m: string) => lines.push(m),
  };
  return { lines, log };
}

describe('validation: output check', () => {
  it('passes a matching result on, without its writeOnly fields, and logs nothing', () => {
    const { lines, log } = logger();
    const body = checkOutput({
      contract,
      result: { id: 't1', secret: 's' },
      correlationId: 'c1',
      validators: new ValidatorCache(),
      samples: new OutputSamples(),
      log,
      strict: true,
    });
    expect(body).to.deep.equal({ id: 't1' });
    expect(lines).to.deep.equal([]);
  });

  it('logs a mismatch with the correlation id and passes it on when not strict', () => {
    const { lines, log } = logger();
    const body = checkOutput({
      contract,
      result: { id: 5, secret: 's' },
      correlationId: 'corr-42',
      validators: new ValidatorCache(),
      samples: new OutputSamples(),
      log,
      strict: false,
    });
    expect(body).to.deep.equal({ id: 5 });
    expect(lines).to.have.length(1);
    expect(lines[0]).to.contain('[corr-42]').and.contain('GetThingQuery').and.contain('id must be a string');
    expect(lines[0]).not.to.contain('"s"');
  });

  it('answers 502 SERVICE_UNAVAILABLE with the service in strict mode', () => {
    const { lines, log } = logger();
    let thrown: unknown;
    try {
      checkOutput({
        contract,
        result: {},
        correlationId: 'c2',
        validators: new ValidatorCache(),
        samples: new OutputSamples(),
        log,
        strict: true,
      });
    } catch (err) {
      thrown = err;
    }
    expect(thrown).to.be.instanceOf(GatewayError);
    const { status, body } = toErrorBody(thrown, 'c2');
    expect(status).to.equal(502);
    expect(body).to.include({ code: 'SERVICE_UNAVAILABLE', error: 'Bad Gateway', service: 'things-service' });
    expect(lines[0]).to.contain('[c2]').and.contain('strictOutput');
  });

  it('answers 500 without the ajv message when the outputSchema does not compile', () => {
    const { log } = logger();
    const broken = { ...contract, outputSchema: { type: 'object', properties: { id: { type: 'nope' } } } };
    try {
      checkOutput({
        contract: broken,
        result: { id: 'x' },
        correlationId: 'c3',
        validators: new ValidatorCache({ log }),
        samples: new OutputSamples(),
        log,
        strict: false,
      });
      expect.fail('should throw');
    } catch (err) {
      const { status, body } = toErrorBody(err, 'c3');
      expect(status).to.equal(500);
      expect(body.code).to.equal('INTERNAL_ERROR');
      expect(JSON.stringify(body)).not.to.match(/nope|schema is invalid|must be equal/);
    }
  });

  it('strict mode is a setting, with STRICT_OUTPUT=true as the environment fallback', () => {
    expect(resolveSettings({}, {}).strictOutput).to.equal(false);
    expect(resolveSettings({}, { STRICT_OUTPUT: 'true' }).strictOutput).to.equal(true);
    expect(resolveSettings({}, { STRICT_OUTPUT: '1' }).strictOutput).to.equal(false);
    expect(resolveSettings({ strictOutput: false }, { STRICT_OUTPUT: 'true' }).strictOutput).to.equal(false);
    expect(resolveSettings({ strictOutput: true }, {}).strictOutput).to.equal(true);
  });

  describe('with strictOutput off: every reply until the contract has passed a while, then a sample', () => {
    const fresh = (): Contract => ({ ...contract, messageType: `GetThing${Math.random().toString(36).slice(2)}Query` });
    /** How many of `n` bad results were logged, after `good` good ones, for one contract. */
    function loggedOf(c: Contract, good: number, n: number, strict = false): number {
      const { lines, log } = logger();
      const validators = new ValidatorCache();
      const samples = new OutputSamples();
      for (let i = 0; i < good; i++)
        checkOutput({ contract: c, result: { id: 'ok' }, correlationId: 'g', validators, samples, log, strict });
      for (let i = 0; i < n; i++) {
        try {
          checkOutput({ contract: c, result: { id: i }, correlationId: 'b', validators, samples, log, strict });
        } catch {
          // strict: 502
        }
      }
      return lines.length;
    }

    it('checks every reply of a new contract', () => {
      expect(loggedOf(fresh(), CHECK_UNTIL_PASSED - 1, 1)).to.equal(1);
    });

    it('checks one reply in SAMPLE_EVERY once CHECK_UNTIL_PASSED have matched, and all again after a mismatch', () => {
      expect(loggedOf(fresh(), CHECK_UNTIL_PASSED, SAMPLE_EVERY - 1)).to.equal(0);
      // The SAMPLE_EVERY-th bad reply is checked, and with it the 5 after it.
      expect(loggedOf(fresh(), CHECK_UNTIL_PASSED, SAMPLE_EVERY + 5)).to.equal(6);
    });

    it('checks every reply in strict mode', () => {
      expect(loggedOf(fresh(), CHECK_UNTIL_PASSED * 2, 10, true)).to.equal(10);
    });

    it('counts per OutputSamples (one per runtime): another one checks every reply of the same contract again', () => {
      const { lines, log } = logger();
      const validators = new ValidatorCache();
      const first = new OutputSamples();
      const second = new OutputSamples();
      const bad = (samples: OutputSamples, id: string) =>
        checkOutput({ contract, result: { id: 5 }, correlationId: id, validators, samples, log, strict: false });
      for (let i = 0; i < CHECK_UNTIL_PASSED; i++)
        checkOutput({
          contract,
          result: { id: 'ok' },
          correlationId: 'g',
          validators,
          samples: first,
          log,
          strict: false,
        });
      bad(first, 'first');
      bad(second, 'second');
      expect(lines).to.have.length(1);
      expect(lines[0]).to.contain('[second]');
    });
  });

  describe('responseJson: the body as JSON text', () => {
    const context = (strictOutput: boolean) => ({
      validators: new ValidatorCache(),
      outputSamples: new OutputSamples(),
      log: logger().log,
      settings: { strictOutput },
    });
    const plain: Contract = { ...contract, outputSchema: { type: 'object', properties: { id: { type: 'string' } } } };

    it("passes the service's own text of the result on when nothing changes it", () => {
      const text = '{"id":"t1", "big":12345678901234567890}';
      expect(responseJson(context(false), plain, () => JSON.parse(text), text, 'c')).to.equal(text);
    });

    it('serialises the result when writeOnly properties were removed, in strict mode, and without the text', () => {
      const text = '{"id":"t1","secret":"s"}';
      expect(responseJson(context(false), contract, () => JSON.parse(text), text, 'c')).to.equal('{"id":"t1"}');
      expect(
        responseJson(context(true), plain, () => JSON.parse('{"id":"a","id":"b"}'), '{"id":"a","id":"b"}', 'c'),
      ).to.equal('{"id":"b"}');
      expect(responseJson(context(false), plain, () => ({ id: 'x' }), undefined, 'c')).to.equal('{"id":"x"}');
    });

    describe('reads (parses) the result only when something needs it', () => {
      const fresh = (c: Contract): Contract => ({
        ...c,
        messageType: `GetThing${Math.random().toString(36).slice(2)}Query`,
      });
      /** How many of `n` replies had their result read, after `good` checked ones, for one contract. */
      function readsOf(
        c: Contract,
        ctx: ReturnType<typeof context>,
        good: number,
        n: number,
        bytesKept = true,
      ): number {
        const text = bytesKept ? '{"id":"t1"}' : undefined;
        for (let i = 0; i < good; i++) responseJson(ctx, c, () => ({ id: 'ok' }), '{"id":"ok"}', 'g');
        let reads = 0;
        for (let i = 0; i < n; i++) {
          const body = responseJson(
            ctx,
            c,
            () => {
              reads++;
              return { id: 't1' };
            },
            text,
            'c',
          );
          expect(String(body)).to.equal('{"id":"t1"}');
        }
        return reads;
      }

      it('not for the replies that are not sampled once the contract has passed a while: their bytes go out unparsed', () => {
        expect(readsOf(fresh(plain), context(false), CHECK_UNTIL_PASSED, SAMPLE_EVERY * 3)).to.equal(3);
      });

      it('for every reply of a new contract, with writeOnly in the outputSchema, in strict mode, and without bytes', () => {
        expect(readsOf(fresh(plain), context(false), 0, CHECK_UNTIL_PASSED)).to.equal(CHECK_UNTIL_PASSED);
        expect(readsOf(fresh(contract), context(false), CHECK_UNTIL_PASSED, SAMPLE_EVERY * 2)).to.equal(
          SAMPLE_EVERY * 2,
        );
        expect(readsOf(fresh(plain), context(true), CHECK_UNTIL_PASSED, SAMPLE_EVERY * 2)).to.equal(SAMPLE_EVERY * 2);
        expect(readsOf(fresh(plain), context(false), CHECK_UNTIL_PASSED, SAMPLE_EVERY * 2, false)).to.equal(
          SAMPLE_EVERY * 2,
        );
      });

      it('a sampled reply that does not match is logged and its bytes passed on; the contract is checked in full again', () => {
        const { lines, log } = logger();
        const ctx = {
          validators: new ValidatorCache(),
          outputSamples: new OutputSamples(),
          log,
          settings: { strictOutput: false },
        };
        const c = fresh(plain);
        for (let i = 0; i < CHECK_UNTIL_PASSED + SAMPLE_EVERY - 1; i++)
          responseJson(ctx, c, () => ({ id: 'ok' }), '{"id":"ok"}', 'g');
        expect(responseJson(ctx, c, () => ({ id: 5 }), '{"id":5}', 'bad')).to.equal('{"id":5}');
        expect(lines).to.have.length(1);
        expect(lines[0]).to.contain('[bad]');
        expect(readsOf(c, ctx, 0, 3)).to.equal(3);
      });

      it('answers 500 for an outputSchema that does not compile without reading the result', () => {
        const broken = fresh({ ...contract, outputSchema: { type: 'object', properties: { id: { type: 'nope' } } } });
        let reads = 0;
        expect(() => responseJson(context(false), broken, () => reads++, '{}', 'c')).to.throw(GatewayError);
        expect(reads).to.equal(0);
      });
    });
  });
});
