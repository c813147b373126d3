import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
const GUARD = join(__dirname, '../../plugin/bus/amqp/header-guard.js');

/** Runs `body` in a fresh node (so that which of amqplib and the guard loads first is the test's to pick); its JSON output. */
async function inFreshNode(body: string): Promise<Record<string, unknown>> {
  const script = `const path = require('node:path');
const defs = () => require(path.join(path.dirname(require.resolve('amqplib')), 'lib', 'defs.js'));
${body}`;
  const stdout = await new Promise<string>((resolve, reject) => {
    execFile(process.execPath, ['-e', script], { cwd: join(__dirname, '../..'), timeout: 15_000 }, (err, out) =>
      err ? reject(err) : resolve(String(out)),
    );
  });
  return JSON.parse(stdout) as Record<string, unknown>;
}

describe("the guard on amqplib's header decoder", () => {
  it('installs when loaded before amqplib: a 9,000-deep header table decodes to no headers, flat and shallow ones as they are', async () => {
    const out = await inFreshNode(`
const guard = require(${JSON.stringify(GUARD)});
require('amqplib');
const BASIC_PROPERTIES = 60;
const deep = defs().decode(BASIC_PROPERTIES, guard.nestedHeadersPayload(9000)).headers;
const atLimit = defs().decode(BASIC_PROPERTIES, guard.nestedHeadersPayload(guard.MAX_HEADER_DEPTH)).headers;
const over = defs().decode(BASIC_PROPERTIES, guard.nestedHeadersPayload(guard.MAX_HEADER_DEPTH + 1)).headers;
const flat = { correlationId: 'c-1', user: '{"id":"u"}', n: 7, list: [1, 'x', { k: true }] };
const buf = defs().encodeProperties(BASIC_PROPERTIES, 1, 0, { headers: flat });
const back = defs().decode(BASIC_PROPERTIES, buf.subarray(7 + 12, buf.length - 1)).headers;
let depth = 0; for (let t = atLimit; t && t.a; t = t.a) depth += 1;
console.log(JSON.stringify({ installed: guard.headerGuardInstalled, deepInvalid: deep === guard.INVALID_HEADERS, deepKeys: Object.keys(deep), depth,
  overInvalid: over === guard.INVALID_HEADERS, back, invalidMsg: guard.hasInvalidHeaders({ properties: { headers: deep } }), flatMsg: guard.hasInvalidHeaders({ properties: { headers: back } }) }));
`);
    expect(out).to.deep.equal({
      installed: true,
      deepInvalid: true,
      deepKeys: [],
      depth: 16,
      overInvalid: true,
      back: { correlationId: 'c-1', user: '{"id":"u"}', n: 7, list: [1, 'x', { k: true }] },
      invalidMsg: true,
      flatMsg: false,
    });
  });

  it('decodes what amqplib decodes, every type, and refuses 12,000 keys, arrays 1,000 deep and unknown tags', async () => {
    const out = await inFreshNode(`
const codec = require(path.join(path.dirname(require.resolve('amqplib')), 'lib', 'codec.js'));
const original = codec.decodeFields;
const guard = require(${JSON.stringify(GUARD)});
const encode = (table) => { const buf = Buffer.alloc(1 << 20); const n = codec.encodeTable(buf, table, 0); return buf.subarray(4, n); };
const rich = { s: 'text', n: 7, neg: -300, big: 70000, long: 2 ** 40, d: 1.5, t: true, f: false, v: null, x: Buffer.from('raw'),
  ts: { '!': 'timestamp', value: 1700000000 }, dec: { '!': 'decimal', value: { places: 2, digits: 1234 } }, fl: { '!': 'float', value: 0.5 },
  arr: [1, 'two', [3, [4]], { five: 5 }], nested: { a: { b: { c: 'deep enough' } } } };
const same = JSON.stringify(codec.decodeFields(encode(rich))) === JSON.stringify(original(encode(rich)));
const many = {}; for (let i = 0; i < 12000; i++) many['k' + i] = i;
const allowed = {}; for (let i = 0; i < 128; i++) allowed['k' + i] = i;
let arr = []; for (let i = 0; i < 1000; i++) arr = [arr]; // amqplib's encoder recurses as well
const unknownTag = Buffer.from([1, 0x61, 0x5a]);
const proto = codec.decodeFields(Buffer.concat([Buffer.from([9]), Buffer.from('__proto__'), Buffer.from([0x46, 0, 0, 0, 0])]));
console.log(JSON.stringify({ same, many: codec.decodeFields(encode(many)) === guard.INVALID_HEADERS, allowed: Object.keys(codec.decodeFields(encode(allowed))).length,
  deepArray: codec.decodeFields(encode({ arr })) === guard.INVALID_HEADERS, unknownTag: codec.decodeFields(unknownTag) === guard.INVALID_HEADERS,
  protoOwn: Object.getPrototypeOf(proto) === Object.prototype && Object.keys(proto).join() === '__proto__' }));
`);
    expect(out).to.deep.equal({
      same: true,
      many: true,
      allowed: 128,
      deepArray: true,
      unknownTag: true,
      protoOwn: true,
    });
  });

  it('reports that it could not install when amqplib was loaded first', async () => {
    const out = await inFreshNode(`
require('amqplib');
const guard = require(${JSON.stringify(GUARD)});
console.log(JSON.stringify({ installed: guard.headerGuardInstalled }));
`);
    expect(out).to.deep.equal({ installed: false });
  });
});
