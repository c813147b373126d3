import { expect } from 'chai';
import { checkJson, JSON_MALFORMED, JSON_OK, JSON_TOO_DEEP } from '../../plugin/request/json-syntax';
import { nestedDeeperThan } from '../../plugin/request/json-depth';

const bytes = (text: string): Buffer => Buffer.from(text, 'utf8');
const verdictOf = (text: string | Buffer, maxDepth?: number) =>
  checkJson(typeof text === 'string' ? bytes(text) : text, 0, undefined, maxDepth);

/** What JSON.parse says of the bytes decoded as UTF-8 (bad bytes become U+FFFD, as for a reply). */
function parses(b: Buffer): boolean {
  try {
    JSON.parse(b.toString('utf8'));
    return true;
  } catch {
    return false;
  }
}

/** A small deterministic generator (mulberry32), so a failing case can be reproduced from its seed. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const VALID = [
  '0',
  '-0',
  '1',
  '-1',
  '10',
  '123456789012345678901234567890',
  '0.5',
  '-0.0',
  '1.25e10',
  '1E+2',
  '1e-2',
  '0e0',
  '-9.99E-999',
  '""',
  '"a"',
  '" "',
  '"\\"\\\\\\/\\b\\f\\n\\r\\t"',
  '"\\u0000\\uFFFF\\uabcd\\uD800"',
  '"ü€😀"',
  '"\u2028\u2029"',
  '"\u007f"',
  '"[{]}:,"',
  'true',
  'false',
  'null',
  '[]',
  '{}',
  '[ ]',
  '{ }',
  '[1,2,3]',
  '{"a":1,"b":[true,false,null]}',
  '{"a":1,"a":2}',
  '{"":""}',
  '[[[]]]',
  '[{},{"x":{}}]',
  ' \t\n\r{ "a" : [ 1 , { } ] } \r\n\t ',
  '{"__proto__":{"x":1}}',
];

/** Malformed forms, each with why; every one is also refused by JSON.parse (checked below). */
const MALFORMED: Array<[string, string | Buffer]> = [
  ['nothing', ''],
  ['whitespace only', ' \n\t'],
  ['two values', '1 2'],
  ['two objects', '{}{}'],
  ['text after the value', '{"a":1}x'],
  ['a NUL after the value', '{}\u0000'],
  ['a BOM before the value', '\ufeff{}'],
  ['a non-breaking space', '\u00a0{}'],
  ['a vertical tab', '\u000b1'],
  ['a form feed', '\u000c1'],
  ['a leading plus', '+1'],
  ['a leading zero', '01'],
  ['a negative leading zero', '-01'],
  ['a lone minus', '-'],
  ['minus then space', '- 1'],
  ['a dot first', '.5'],
  ['a dot last', '1.'],
  ['a dot before the exponent', '1.e5'],
  ['an exponent without digits', '1e'],
  ['an exponent sign without digits', '1e+'],
  ['two exponent signs', '1e+-2'],
  ['two dots', '1.2.3'],
  ['hex', '0x10'],
  ['Infinity', 'Infinity'],
  ['NaN', 'NaN'],
  ['a number in pieces', '[1 2]'],
  ['an unterminated string', '"abc'],
  ['an unterminated string at an escape', '"abc\\'],
  ['a single-quoted string', "'a'"],
  ['a raw NUL in a string', '"a\u0000b"'],
  ['a raw LF in a string', '"a\nb"'],
  ['a raw tab in a string', '"a\tb"'],
  ['a raw unit separator in a string', '"\u001f"'],
  ['an unknown escape', '"\\a"'],
  ['an escaped single quote', '"\\\'"'],
  ['an escape of a digit', '"\\0"'],
  ['a short \\u escape', '"\\u12"'],
  ['a \\u escape with a non-hex digit', '"\\u12g4"'],
  ['a \\u escape cut by the quote', '"\\u123"'],
  ['an escaped newline', '"\\\n"'],
  ['an uppercase escape letter', '"\\N"'],
  ['True', 'True'],
  ['a truncated true', 'tru'],
  ['a truncated false', 'fals'],
  ['a truncated null', 'nul'],
  ['a literal with a tail', 'nullx'],
  ['undefined', 'undefined'],
  ['a literal in pieces', 'n ull'],
  ['an unclosed array', '[1,2'],
  ['an unclosed object', '{"a":1'],
  ['an unclosed empty array', '['],
  ['an unclosed empty object', '{'],
  ['a stray closer', ']'],
  ['a stray closing brace', '}'],
  ['an array closed by a brace', '[1}'],
  ['an object closed by a bracket', '{"a":1]'],
  ['nested closers swapped', '[{]}'],
  ['one closer too many', '[[]]]'],
  ['a trailing comma in an array', '[1,]'],
  ['a trailing comma in an object', '{"a":1,}'],
  ['a leading comma', '[,1]'],
  ['two commas', '[1,,2]'],
  ['a comma alone', '[,]'],
  ['an object with a comma alone', '{,}'],
  ['a bare key', '{a:1}'],
  ['a number as key', '{1:1}'],
  ['a literal as key', '{null:1}'],
  ['an array as key', '{[]:1}'],
  ['a single-quoted key', "{'a':1}"],
  ['a key without a value', '{"a"}'],
  ['a key and colon without a value', '{"a":}'],
  ['a missing colon', '{"a" 1}'],
  ['two colons', '{"a"::1}'],
  ['an equals sign', '{"a"=1}'],
  ['a missing comma between members', '{"a":1 "b":2}'],
  ['a missing comma between items', '[1 true]'],
  ['a colon in an array', '[1:2]'],
  ['a comment', '[1 /* c */]'],
  ['a line comment', '1 // c'],
  ['a byte over 0x7f outside a string', bytes('[1,\u00e9]')],
  ['an invalid UTF-8 byte outside a string', Buffer.from([0x5b, 0xff, 0x5d])],
  ['a lead byte before a quote, outside a string', Buffer.from([0x5b, 0xe2, 0x22, 0x22, 0x5d])],
  ['an overlong quote, outside a string', Buffer.from([0xc0, 0xa2, 0x61, 0xc0, 0xa2])],
  ['an unterminated string in an object', '{"a":"b}'],
  ['an escaped closing quote', '"abc\\"'],
];

describe('JSON syntax check (no objects built)', () => {
  it('takes every form JSON.parse takes', () => {
    for (const text of VALID) {
      expect(parses(bytes(text)), text).to.equal(true);
      expect(verdictOf(text), text).to.equal(JSON_OK);
    }
  });

  it('refuses every malformed form, each one JSON.parse refuses too', () => {
    for (const [why, text] of MALFORMED) {
      const b = typeof text === 'string' ? bytes(text) : text;
      expect(parses(b), `JSON.parse of ${why}`).to.equal(false);
      expect(verdictOf(b), why).to.equal(JSON_MALFORMED);
    }
  });

  it('takes bytes that are not UTF-8 inside a string, as JSON.parse takes their U+FFFD', () => {
    for (const bad of [[0xff], [0xc0, 0xa2], [0xe2, 0x82], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0x80]]) {
      const b = Buffer.concat([bytes('["a'), Buffer.from(bad), bytes('b"]')]);
      expect(parses(b)).to.equal(true);
      expect(verdictOf(b), String(bad)).to.equal(JSON_OK);
    }
  });

  it('checks only bytes[start, end), and refuses what is cut in the middle of a value', () => {
    const b = bytes('xx{"a":[1,2]}yy');
    expect(checkJson(b, 2, b.length - 2)).to.equal(JSON_OK);
    expect(checkJson(b, 2, b.length - 3)).to.equal(JSON_MALFORMED);
    expect(checkJson(b, 0, b.length - 2)).to.equal(JSON_MALFORMED);
    // A value that would go on past `end` is cut there.
    for (const text of ['"abc"', '123', 'true', '"\\u0041"', '[1]', '1e10']) {
      for (let end = 1; end < text.length; end += 1) {
        expect(checkJson(bytes(text), 0, end), `${text} cut at ${end}`).to.equal(
          parses(bytes(text.slice(0, end))) ? JSON_OK : JSON_MALFORMED,
        );
      }
    }
  });

  it('allows exactly maxDepth levels of objects and arrays, and says TOO_DEEP for one more', () => {
    const arrays = (n: number): string => '['.repeat(n) + ']'.repeat(n);
    const objects = (n: number): string => `${'{"a":'.repeat(n - 1)}{}${'}'.repeat(n - 1)}`;
    expect(verdictOf(arrays(64), 64)).to.equal(JSON_OK);
    expect(verdictOf(arrays(65), 64)).to.equal(JSON_TOO_DEEP);
    expect(verdictOf(objects(3), 3)).to.equal(JSON_OK);
    expect(verdictOf(objects(4), 3)).to.equal(JSON_TOO_DEEP);
    expect(verdictOf('1', 0)).to.equal(JSON_OK);
    expect(verdictOf('[]', 0)).to.equal(JSON_TOO_DEEP);
    // Siblings do not add up; brackets in strings do not count.
    expect(verdictOf(`[${'[1],'.repeat(500)}[2]]`, 2)).to.equal(JSON_OK);
    expect(verdictOf(JSON.stringify({ s: '[[[[{{{{', t: 'say \\"[[[[\\" ü€😀' }), 1)).to.equal(JSON_OK);
  });

  it('needs no recursion: a million levels stop at the limit, 100,000 close without one (past its own stack of levels)', () => {
    expect(verdictOf(bytes('['.repeat(1_000_000)), 100)).to.equal(JSON_TOO_DEEP);
    expect(verdictOf(bytes('['.repeat(100_000) + ']'.repeat(100_000)))).to.equal(JSON_OK);
    expect(verdictOf(bytes(`${'['.repeat(1000)}${']'.repeat(999)}}`))).to.equal(JSON_MALFORMED);
  });

  it('says what nestedDeeperThan says of the depth of well-formed JSON', () => {
    const next = random(7);
    for (let n = 0; n < 500; n += 1) {
      const b = bytes(JSON.stringify(value(next, 0, 12)));
      for (const max of [1, 2, 3, 5, 8]) {
        expect(verdictOf(b, max) === JSON_TOO_DEEP, b.toString()).to.equal(nestedDeeperThan(b, max));
      }
    }
  });

  it('agrees with JSON.parse on 60,000 generated and mutated inputs', function () {
    this.timeout(60_000);
    // Seeded: a disagreement names its seed and input, and the same run finds it again.
    for (let seed = 1; seed <= 60_000; seed += 1) {
      const next = random(seed);
      const b = mutated(next, spaced(next, JSON.stringify(value(next, 0, 4))));
      const verdict = checkJson(b);
      if ((verdict === JSON_OK) !== parses(b))
        expect.fail(
          `seed ${seed}: ${JSON.stringify(b.toString('latin1'))} checked ${verdict}, JSON.parse ${parses(b) ? 'takes it' : 'refuses it'}`,
        );
    }
  });

  it("agrees with JSON.parse on every text of up to 3 characters from the grammar's own alphabet", () => {
    const alphabet = [
      '{',
      '}',
      '[',
      ']',
      '"',
      ':',
      ',',
      ' ',
      '\\',
      '0',
      '1',
      '-',
      '.',
      'e',
      '+',
      'u',
      'a',
      'n',
      't',
      '\u0001',
      'é',
    ];
    const texts = [''];
    let layer = [''];
    for (let len = 1; len <= 3; len += 1) {
      layer = layer.flatMap((t) => alphabet.map((c) => t + c));
      texts.push(...layer);
    }
    for (const text of texts) {
      const b = bytes(text);
      expect(checkJson(b) === JSON_OK, JSON.stringify(text)).to.equal(parses(b));
    }
    // And every text of two structural values in an array or an object.
    const values = ['1', '"x"', '[]', '{}', 'null', '-0.1e1', ''];
    const seps = [',', ':', ' ', ''];
    for (const [o, c] of [
      ['[', ']'],
      ['{', '}'],
    ]) {
      for (const a of values)
        for (const s of seps)
          for (const z of values) {
            for (const text of [`${o}${a}${s}${z}${c}`, `${o}"k"${s}${a}${c}`, `${o}"k":${a}${s}"l":${z}${c}`]) {
              expect(checkJson(bytes(text)) === JSON_OK, text).to.equal(parses(bytes(text)));
            }
          }
    }
  });
});

/** A random JSON value, `depth` levels down, at most `max` levels deep. */
function value(next: () => number, depth: number, max: number): unknown {
  const r = next();
  if (depth < max && r < 0.2) return Array.from({ length: Math.floor(next() * 4) }, () => value(next, depth + 1, max));
  if (depth < max && r < 0.4) {
    const o: Record<string, unknown> = {};
    for (let k = Math.floor(next() * 4); k > 0; k -= 1) o[text(next)] = value(next, depth + 1, max);
    return o;
  }
  if (r < 0.6) return text(next);
  if (r < 0.8) {
    const kind = Math.floor(next() * 4);
    if (kind === 0) return Math.floor(next() * 2000) - 1000;
    if (kind === 1) return (next() - 0.5) * 10 ** Math.floor(next() * 40 - 20);
    if (kind === 2) return Number.MAX_VALUE * next();
    return 0;
  }
  return [true, false, null][Math.floor(next() * 3)];
}

/** Text with the characters that matter to a string's syntax: quotes, backslashes, control and non-ASCII characters. */
function text(next: () => number): string {
  const pool = [
    'a',
    'b',
    ' ',
    '"',
    '\\',
    '/',
    '\n',
    '\t',
    '\u0000',
    '\u001f',
    '\u007f',
    'é',
    '€',
    '😀',
    '\ud800',
    '\u2028',
    '[',
    '{',
    ':',
    ',',
  ];
  let s = '';
  for (let k = Math.floor(next() * 6); k > 0; k -= 1) s += pool[Math.floor(next() * pool.length)];
  return s;
}

/** The JSON text with whitespace of all four kinds put between tokens (outside strings) here and there. */
function spaced(next: () => number, json: string): string {
  let out = '';
  let inString = false;
  for (let i = 0; i < json.length; i += 1) {
    const c = json[i];
    out += c;
    if (inString) {
      if (c === '\\') out += json[++i];
      else if (c === '"') inString = false;
    } else if (c === '"') {
      inString = true;
    }
    if (!inString && next() < 0.1) out += [' ', '\t', '\n', '\r'][Math.floor(next() * 4)];
  }
  return out;
}

/** Bytes a mutation or a few away from `json`: a byte inserted, deleted, replaced or doubled, a piece cut off or moved. */
function mutated(next: () => number, json: string): Buffer {
  let b = bytes(json);
  const pick = (): number => Math.floor(next() * (b.length + 1));
  const interesting = [
    0x22, 0x5c, 0x7b, 0x7d, 0x5b, 0x5d, 0x3a, 0x2c, 0x20, 0x0a, 0x00, 0x1f, 0x7f, 0x80, 0xc3, 0xff, 0x30, 0x31, 0x2d,
    0x2b, 0x2e, 0x65, 0x45, 0x75, 0x61, 0x66, 0x74, 0x6e, 0x6c,
  ];
  const anyByte = (): number =>
    next() < 0.8 ? interesting[Math.floor(next() * interesting.length)] : Math.floor(next() * 256);
  // One in five is left as it is: valid JSON must be taken, too.
  const times = next() < 0.2 ? 0 : 1 + Math.floor(next() * 3);
  for (let t = 0; t < times; t += 1) {
    const at = pick();
    const kind = Math.floor(next() * 6);
    if (kind === 0) b = Buffer.concat([b.subarray(0, at), Buffer.from([anyByte()]), b.subarray(at)]);
    else if (kind === 1 && at < b.length) b = Buffer.concat([b.subarray(0, at), b.subarray(at + 1)]);
    else if (kind === 2 && at < b.length) (b = Buffer.from(b))[at] = anyByte();
    else if (kind === 3 && at < b.length) b = Buffer.concat([b.subarray(0, at + 1), b.subarray(at)]);
    else if (kind === 4) b = b.subarray(0, at);
    else {
      const to = pick();
      const [from, until] = at < to ? [at, to] : [to, at];
      b = Buffer.concat([b.subarray(until), b.subarray(from, until), b.subarray(0, from)]);
    }
  }
  return b;
}
