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
    execFile(process.execPath, ['-e', script], { cwd: join(__dirname, '../..'), timeout: 15_000 }, (err, out) => (err ? reject(err) : resolve(String(out))));
  });
  return JSON.parse(stdout) as Record<string, unknown>;
}

describe('the guard on amqplib\'s header decoder', () => {
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

  it('reports that it could not install when amqplib was loaded first', async () => {
    const out = await inFreshNode(`
require('amqplib');
const guard = require(${JSON.stringify(GUARD)});
console.log(JSON.stringify({ installed: guard.headerGuardInstalled }));
`);
    expect(out).to.deep.equal({ installed: false });
  });
});
