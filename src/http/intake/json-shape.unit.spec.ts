import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { hasNulEscape, JSON_BOUNDS, jsonBoundsProblem } from './json-shape';

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
