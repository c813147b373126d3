import { expect } from 'chai';
import type { Request, Response } from 'express';
import { traceOf } from '../../plugin/request/trace';

function exchange(headers: Record<string, string>) {
  const set: Record<string, string> = {};
  const req = { headers } as unknown as Request;
  const res = { setHeader: (n: string, v: string) => (set[n] = v) } as unknown as Response;
  return { req, res, set };
}

/** A gateway-made id (plugin/request/ids.ts newTraceId): a random UUID, version 4. */
const GENERATED_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('trace ids', () => {
  it('echoes a safe caller correlation id and sets both ids on the response at once', () => {
    const { req, res, set } = exchange({ 'x-correlation-id': 'order-42:retry.1_a' });
    const trace = traceOf(req, res);
    expect(trace.correlationId).to.equal('order-42:retry.1_a');
    expect(trace.requestId).to.match(GENERATED_ID);
    expect(set).to.deep.equal({ 'X-Correlation-Id': 'order-42:retry.1_a', 'X-Request-Id': trace.requestId });
    expect(traceOf(req, res), 'once per request').to.equal(trace);
  });

  it('replaces an id that is too long or carries unsafe characters', () => {
    for (const given of [
      'a'.repeat(129),
      'x'.repeat(500),
      'abc\r\nSet-Cookie: a=1',
      'two words',
      '<script>',
      'a, b',
      '',
    ]) {
      const { req, res } = exchange({ 'x-correlation-id': given });
      expect(traceOf(req, res).correlationId, JSON.stringify(given)).to.match(GENERATED_ID);
    }
    const { req, res } = exchange({ 'x-correlation-id': 'a'.repeat(128) });
    expect(traceOf(req, res).correlationId).to.equal('a'.repeat(128));
  });

  it('makes a new request id per request', () => {
    const ids = new Set(
      Array.from({ length: 50 }, () => {
        const { req, res } = exchange({ 'x-correlation-id': 'same' });
        return traceOf(req, res).requestId;
      }),
    );
    expect(ids.size).to.equal(50);
  });
});
