import { expect } from 'chai';
import { decodeReply, resultJsonOf, TOO_DEEP } from '../../plugin/bus/envelope';
import type { Reply } from '../../plugin/bus/transport';

describe('bus: reply bytes', () => {
  const decode = (text: string) => decodeReply(Buffer.from(text, 'utf8'));

  /** How many times JSON.parse ran during `fn`. */
  function parsesDuring(fn: () => void): number {
    const parse = JSON.parse;
    let n = 0;
    JSON.parse = (...args: Parameters<typeof parse>) => {
      n += 1;
      return parse(...args) as unknown;
    };
    try {
      fn();
    } finally {
      JSON.parse = parse;
    }
    return n;
  }

  it('keeps the bytes of the result of the usual success reply, and parses them only when the result is read', () => {
    let reply: Reply | undefined;
    expect(parsesDuring(() => (reply = decode('{"ok":true,"result":{"id":"u1","n":[1,2]}}') as Reply))).to.equal(0);
    expect(resultJsonOf(reply!)?.toString()).to.equal('{"id":"u1","n":[1,2]}');
    let first: unknown;
    let again: unknown;
    const read = reply as { result: unknown };
    expect(
      parsesDuring(() => {
        first = read.result;
        again = read.result;
      }),
    ).to.equal(1);
    expect(first).to.deep.equal({ id: 'u1', n: [1, 2] });
    expect(again).to.equal(first);
    expect(Object.keys(reply!)).to.deep.equal(['ok', 'result']);
    expect(JSON.stringify(decode('{"ok":true,"result":[1,"x"]}'))).to.equal('{"ok":true,"result":[1,"x"]}');
  });

  it('drops the kept bytes when the result is replaced', () => {
    const reply = decode('{"ok":true,"result":1}') as { ok: true; result?: unknown };
    reply.result = 2;
    expect(reply.result).to.equal(2);
    expect(resultJsonOf(reply)).to.equal(undefined);
  });

  it('keeps the text of the result of the usual success reply, parsed once', () => {
    const reply = decode('{"ok":true,"result":{"id":"u1","n":[1,2]}}') as Reply;
    expect(reply).to.deep.equal({ ok: true, result: { id: 'u1', n: [1, 2] } });
    expect(resultJsonOf(reply)?.toString()).to.equal('{"id":"u1","n":[1,2]}');
    expect(resultJsonOf(decode('{"ok":true,"result":null}') as Reply)?.toString()).to.equal('null');
    const accented = decode('{"ok":true,"result":"Zoë"}') as Reply;
    expect(resultJsonOf(accented)?.toString()).to.equal('"Zoë"');
  });

  it('parses any other reply whole, without a text of the result', () => {
    const created = decode('{"ok":true,"result":{"id":"u1"},"status":201,"location":"/api/users/u1"}') as Reply;
    expect(created).to.deep.equal({ ok: true, result: { id: 'u1' }, status: 201, location: '/api/users/u1' });
    expect(resultJsonOf(created)).to.equal(undefined);
    // Duplicate keys: the text after `"result":` is not the result's.
    expect(decode('{"ok":true,"result":1,"result":2}')).to.deep.equal({ ok: true, result: 2 });
    expect(decode('{"ok":false,"error":{"code":"NOT_FOUND"}}')).to.deep.equal({
      ok: false,
      error: { code: 'NOT_FOUND' },
    });
    expect(decode('{ "ok": true, "result": 3 }')).to.deep.equal({ ok: true, result: 3 });
  });

  it('keeps no bytes that are not UTF-8: the caller gets the decoded text, U+FFFD in their place', () => {
    const bytes = Buffer.concat([Buffer.from('{"ok":true,"result":"a'), Buffer.from([0xff]), Buffer.from('"}')]);
    const reply = decodeReply(bytes) as Reply;
    expect(reply).to.deep.equal({ ok: true, result: 'a\ufffd' });
    expect(resultJsonOf(reply)).to.equal(undefined);
  });

  it('tells what is not JSON, the usual shape included, without parsing it', () => {
    for (const text of [
      '{"ok":true,"result":{"id":}',
      '{"ok":true,"result":',
      'not json',
      '{"ok":true,"result":01}',
      '{"ok":true,"result":[1,]}',
      '{"ok":true,"result":"a\u0001"}',
      '{"ok":true,"result":"\\x"}',
      '{"ok":true,"result":tru}',
      '{"ok":true,"result":{"a":1}}}',
      '{"ok":true,"result":1}{"ok":true,"result":2}',
      '{"ok":true,"result":NaN}',
    ]) {
      expect(
        parsesDuring(() => expect(decode(text), text).to.equal(undefined)),
        text,
      ).to.equal(0);
    }
  });

  it('says TOO_DEEP for a reply nested deeper than the limit (the envelope counts), usual shape or not', () => {
    const arrays = (n: number): string => '['.repeat(n) + ']'.repeat(n);
    expect(decodeReply(Buffer.from(`{"ok":true,"result":${arrays(9)}}`), 10)).to.not.equal(TOO_DEEP);
    expect(decodeReply(Buffer.from(`{"ok":true,"result":${arrays(10)}}`), 10)).to.equal(TOO_DEEP);
    expect(decodeReply(Buffer.from(`{"ok":true,"status":201,"result":${arrays(9)}}`), 10)).to.deep.include({
      status: 201,
    });
    expect(decodeReply(Buffer.from(`{"ok":true,"status":201,"result":${arrays(10)}}`), 10)).to.equal(TOO_DEEP);
    expect(decodeReply(Buffer.from(`{"ok":true,"result":1,"x":${arrays(10)}}`), 10)).to.equal(TOO_DEEP);
    // MAX_REPLY_DEPTH by default: 256 with the envelope.
    expect(decode(`{"ok":true,"result":${arrays(256)}}`)).to.equal(TOO_DEEP);
    expect(decode(`{"ok":true,"result":${arrays(255)}}`)).to.have.property('ok', true);
  });
});
