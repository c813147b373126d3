import { expect } from 'chai';
import { decodeReply, resultJsonOf } from '../../plugin/bus/envelope';
import type { Reply } from '../../plugin/bus/transport';

describe('bus: reply bytes', () => {
  const decode = (text: string) => decodeReply(Buffer.from(text, 'utf8'));

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
    expect(decode('{"ok":false,"error":{"code":"NOT_FOUND"}}')).to.deep.equal({ ok: false, error: { code: 'NOT_FOUND' } });
    expect(decode('{ "ok": true, "result": 3 }')).to.deep.equal({ ok: true, result: 3 });
  });

  it('keeps no bytes that are not UTF-8: the caller gets the decoded text, U+FFFD in their place', () => {
    const bytes = Buffer.concat([Buffer.from('{"ok":true,"result":"a'), Buffer.from([0xff]), Buffer.from('"}')]);
    const reply = decodeReply(bytes) as Reply;
    expect(reply).to.deep.equal({ ok: true, result: 'a\ufffd' });
    expect(resultJsonOf(reply)).to.equal(undefined);
  });

  it('tells what is not JSON', () => {
    expect(decode('{"ok":true,"result":{"id":}')).to.equal(undefined);
    expect(decode('{"ok":true,"result":')).to.equal(undefined);
    expect(decode('not json')).to.equal(undefined);
  });
});
