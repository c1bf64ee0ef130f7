import { describe, expect, it } from 'vitest';
import { checkIdempotencyKey } from '../../src/idempotency/key';

describe('Idempotency-Key validation', () => {
  it('no header means no deduplication', () => {
    expect(checkIdempotencyKey(undefined)).toEqual({ kind: 'absent' });
  });

  it.each([
    ['a'],
    ['x'.repeat(200)],
    ['!~'],
    ['550e8400-e29b-41d4-a716-446655440000'],
    ['order:42/attempt#1?"\'{}'],
  ])('accepts 1-200 printable ASCII characters: %s', (key) => {
    expect(checkIdempotencyKey(key)).toEqual({ kind: 'valid', key });
  });

  it.each([
    ['empty', ''],
    ['over 200 characters', 'x'.repeat(201)],
    ['a space', 'a b'],
    ['a leading space', ' ab'],
    ['a tab', 'a\tb'],
    ['a control character', 'a\x01b'],
    ['DEL', 'a\x7fb'],
    ['non-ASCII', 'clé'],
    ['an emoji', 'key-😀'],
  ])('refuses %s', (_what, key) => {
    const check = checkIdempotencyKey(key);
    expect(check.kind).toBe('invalid');
    if (check.kind === 'invalid') expect(check.message).toMatch(/^Invalid Idempotency-Key/);
  });

  it('refuses a repeated header (Node joins the values with ", ")', () => {
    expect(checkIdempotencyKey(['a', 'b']).kind).toBe('invalid');
  });
});
