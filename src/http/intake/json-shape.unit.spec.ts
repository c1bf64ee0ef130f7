import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { hasNulEscape, JSON_BOUNDS, jsonBoundsProblem, StringLengthWatch } from './json-shape';

const RUNS = Math.min(Number(process.env.FC_RUNS ?? 2_000), 2_000);

/** What the scan should find, computed on the parsed value. */
function shape(value: unknown): { depth: number; items: number } {
  if (value === null || typeof value !== 'object') return { depth: 0, items: 0 };
  const children = Array.isArray(value) ? value : Object.values(value);
  let depth = 0;
  let items = 1 + Math.max(0, children.length - 1); // the container, and the commas between its items
  for (const child of children) {
    const inner = shape(child);
    depth = Math.max(depth, inner.depth);
    items += inner.items;
  }
  return { depth: depth + 1, items };
}

/** Strings full of the characters a naive scan would mistake for structure. */
const tricky = fc.string({ unit: fc.constantFrom('"', '\\', '[', ']', '{', '}', ',', 'a', 'é', '\u0000', '\n') });
const json = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, tricky, fc.integer(), fc.constant(null), tie('array'), tie('object')),
  array: fc.array(tie('value'), { maxLength: 5 }),
  object: fc.dictionary(tricky, tie('value'), { maxKeys: 5 }),
})).value;

/** Whether any string of a value (a key included) holds a NUL character. */
function holdsNul(value: unknown): boolean {
  if (typeof value === 'string') return value.includes('\u0000');
  if (value === null || typeof value !== 'object') return false;
  return Object.entries(value).some(([k, v]) => (!Array.isArray(value) && k.includes('\u0000')) || holdsNul(v));
}

describe('hasNulEscape', () => {
  it('is true exactly when a string of the JSON text holds a NUL, escaped backslashes notwithstanding', () => {
    fc.assert(
      fc.property(json, (value) => {
        expect(hasNulEscape(JSON.stringify(value))).toBe(holdsNul(value));
      }),
      { numRuns: RUNS },
    );
    expect(hasNulEscape(JSON.stringify({ a: '\\u0000' }))).toBe(false);
    expect(hasNulEscape(JSON.stringify({ a: '\\\u0000' }))).toBe(true);
  });
});

describe('jsonBoundsProblem', () => {
  it('finds exactly the depth and the item count of any JSON text, whatever its strings hold', () => {
    fc.assert(
      fc.property(json, fc.boolean(), (value, pretty) => {
        const text = JSON.stringify(value, null, pretty ? 2 : undefined);
        const { depth, items } = shape(value);
        expect(jsonBoundsProblem(text, { depth, items })).toBeNull();
        if (depth > 0) expect(jsonBoundsProblem(text, { depth: depth - 1, items: Infinity })).toMatch(/nested more than/);
        if (items > 0) expect(jsonBoundsProblem(text, { depth: Infinity, items: items - 1 })).toMatch(/values/);
      }),
      { numRuns: RUNS },
    );
  });

  it('takes the documented bounds by default', () => {
    expect(jsonBoundsProblem(`${'['.repeat(128)}${']'.repeat(128)}`)).toBeNull();
    expect(jsonBoundsProblem(`${'{"a":'.repeat(128)}1${'}'.repeat(128)}`)).toBeNull();
    expect(jsonBoundsProblem(`${'['.repeat(129)}${']'.repeat(129)}`)).toBe('the JSON body is nested more than 128 levels deep');
    expect(jsonBoundsProblem(`[${'0,'.repeat(JSON_BOUNDS.items)}0]`)).toBe('the JSON body has more than 200,000 values (objects, arrays and their items)');
  });

  it('stops at the first bound it passes, without reading the rest', () => {
    // An unterminated tail after the refusal point is never looked at.
    expect(jsonBoundsProblem(`${'['.repeat(200)}"never closed`)).toMatch(/nested more than 128/);
  });

  it('leaves text that is not JSON to the parser', () => {
    expect(jsonBoundsProblem('"unterminated')).toBeNull();
    expect(jsonBoundsProblem(']]]]')).toBeNull();
    expect(jsonBoundsProblem('')).toBeNull();
  });

  it('skips a long string in one step: a 95 MB base64 image is cheap to check', () => {
    const image = `{"image":"${'QUFB'.repeat(24 * 1024 * 1024)}","escaped":"${'\\"'.repeat(1000)}"}`;
    expect(jsonBoundsProblem(image, { depth: 1, items: 2 })).toBeNull();
  });
});

/** The longest string of a value (keys included), in bytes as JSON.stringify writes it. */
function longestString(value: unknown): number {
  const raw = (s: string) => Buffer.byteLength(JSON.stringify(s)) - 2;
  if (typeof value === 'string') return raw(value);
  if (value === null || typeof value !== 'object') return 0;
  const keys = Array.isArray(value) ? [] : Object.keys(value).map(raw);
  return Math.max(0, ...keys, ...Object.values(value).map(longestString));
}

/** Feeds `bytes` cut at `cuts`; the offset just after the chunk that tripped the watch, or null. */
function watch(limit: number, bytes: Buffer, cuts: readonly number[]): number | null {
  const w = new StringLengthWatch(limit);
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  let from = 0;
  for (const to of [...points, bytes.length]) {
    if (w.feed(bytes.subarray(from, to))) return to;
    from = to;
  }
  return null;
}

describe('StringLengthWatch', () => {
  it('trips exactly when a string of the text (a key too) is longer than the limit, however the text is cut into chunks', () => {
    fc.assert(
      fc.property(json, fc.nat({ max: 12 }), fc.array(fc.nat(), { maxLength: 8 }), (value, limit, cuts) => {
        const bytes = Buffer.from(JSON.stringify(value));
        expect(watch(limit, bytes, cuts) !== null).toBe(longestString(value) > limit);
      }),
      { numRuns: RUNS },
    );
  });

  it('trips at the byte that passes the limit, without the rest of the body', () => {
    const head = Buffer.from(`{"model":"m","image":"data:image/png;base64,${'A'.repeat(100)}`);
    const fed = Buffer.concat([head, Buffer.from(`${'A'.repeat(1000)}"}`)]);
    const limit = head.length - '{"model":"m","image":"'.length;
    // One byte at a time: it trips on the first byte past the limit.
    expect(watch(limit, fed, Array.from({ length: fed.length }, (_, i) => i))).toBe(head.length + 1);
    expect(watch(limit, head, [])).toBeNull();
  });

  it('counts escapes as sent, and an escaped quote does not end the string, split or not', () => {
    const text = Buffer.from(JSON.stringify({ a: 'x"\\"y' }));
    const raw = Buffer.byteLength(JSON.stringify('x"\\"y')) - 2;
    for (let cut = 0; cut <= text.length; cut++) {
      expect(watch(raw, text, [cut])).toBeNull();
      expect(watch(raw - 1, text, [cut])).not.toBeNull();
    }
  });
});
