import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeJson, storableText, toJsonValue } from './json';

describe('encodeJson', () => {
  it('writes bigints as decimal strings, everything else as JSON.stringify does', () => {
    const date = new Date(1_700_000_000_000);
    expect(encodeJson({ amount: 12345678901234567890n, list: [1n, 'x', null], at: date, skip: undefined, nested: { n: -5n } })).toBe(
      JSON.stringify({ amount: '12345678901234567890', list: ['1', 'x', null], at: date, nested: { n: '-5' } }),
    );
  });

  it('keeps a key named __proto__ a key', () => {
    const value = JSON.parse('{"__proto__": {"a": 1}, "b": 2}');
    expect(encodeJson(value)).toBe(JSON.stringify(value));
  });

  it('equals JSON.stringify with a bigint replacer on any JSON-like value', () => {
    const value = fc.letrec((tie) => ({
      leaf: fc.oneof(fc.bigInt(), fc.string(), fc.integer(), fc.double({ noNaN: true }), fc.boolean(), fc.constant(null)),
      node: fc.oneof({ depthSize: 'small' }, tie('leaf'), fc.array(tie('node')), fc.dictionary(fc.string(), tie('node'))),
    })).node;
    fc.assert(fc.property(value, (v) => encodeJson(v) === JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? x.toString() : x))));
  });

  it('gives the value a JSON round trip would give, bigints as strings', () => {
    const value = fc.letrec((tie) => ({
      leaf: fc.oneof(fc.bigInt(), fc.string(), fc.integer(), fc.double(), fc.constantFrom(NaN, Infinity, -Infinity, -0), fc.boolean(), fc.constant(null), fc.constant(undefined), fc.date({ noInvalidDate: true })),
      node: fc.oneof({ depthSize: 'small' }, tie('leaf'), fc.array(tie('node')), fc.dictionary(fc.string(), tie('node'))),
    })).node;
    fc.assert(
      fc.property(value, (v) => {
        const text = encodeJson(v);
        expect(toJsonValue(v)).toStrictEqual(text === undefined ? undefined : JSON.parse(text));
      }),
    );
  });

  it('gives null for NaN and the infinities and 0 for -0, as JSON does (an append is checked on this form)', () => {
    expect(toJsonValue({ a: NaN, b: [Infinity, -Infinity], c: -0 })).toStrictEqual({ a: null, b: [null, null], c: 0 });
  });

  it('replaces U+0000 and unpaired surrogates with U+FFFD, keeps everything else, the same string when there is nothing to replace', () => {
    expect(storableText('a\u0000b\ud800c\udc00d\ud83d\ude00e')).toBe('a\ufffdb\ufffdc\ufffdd\ud83d\ude00e');
    expect(storableText('\ud83d')).toBe('\ufffd');
    expect(encodeJson({ ['k\u0000']: ['v\udfff'] })).toBe('{"k\ufffd":["v\ufffd"]}');
    // Well formed: survives a UTF-8 round trip unchanged (an unpaired surrogate does not).
    const wellFormed = (text: string) => Buffer.from(text, 'utf8').toString('utf8') === text;
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        const stored = storableText(text);
        expect(wellFormed(stored)).toBe(true);
        expect(stored.includes('\u0000')).toBe(false);
        expect(stored.length).toBe(text.length);
        if (wellFormed(text) && !text.includes('\u0000')) expect(stored).toBe(text);
      }),
    );
  });
});
