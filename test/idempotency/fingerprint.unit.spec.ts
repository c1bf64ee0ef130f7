import { describe, expect, it } from 'vitest';
import { canonicalJson, fingerprintBody, fingerprintParts } from '../../src/idempotency/fingerprint';

const PATH = '/v1/images/generations';
const fp = (body: unknown, method = 'POST', path = PATH) => fingerprintBody(method, path, body);

describe('canonical JSON', () => {
  it('sorts object keys at every depth and drops whitespace', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } })).toBe('{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}');
  });

  it('follows JSON for undefined members, undefined array items and non-finite numbers', () => {
    expect(canonicalJson({ a: undefined, b: [undefined, NaN] })).toBe('{"b":[null,null]}');
  });
});

describe('request fingerprint', () => {
  const body = { model: 'img-1', prompt: 'a red fox', n: 2, size: '1024x1024', image_urls: ['https://a', 'https://b'] };

  it('is a SHA-256 hex digest, the same for the same request', () => {
    expect(fp(body)).toMatch(/^[0-9a-f]{64}$/);
    expect(fp(body)).toBe(fp(structuredClone(body)));
  });

  it('ignores the order of object keys', () => {
    const reordered = { image_urls: ['https://a', 'https://b'], size: '1024x1024', n: 2, prompt: 'a red fox', model: 'img-1' };
    expect(fp(reordered)).toBe(fp(body));
  });

  it.each([
    ['a changed value', { ...body, prompt: 'a red fox.' }],
    ['a number for a string', { ...body, n: '2' }],
    ['an added member', { ...body, async: false }],
    ['a removed member', { model: body.model, prompt: body.prompt, n: 2, image_urls: body.image_urls }],
    ['swapped array items (order is meaningful)', { ...body, image_urls: ['https://b', 'https://a'] }],
  ])('changes with %s', (_what, other) => {
    expect(fp(other)).not.toBe(fp(body));
  });

  it('binds the method and the path', () => {
    expect(fp(body, 'POST', '/v1/images/edits')).not.toBe(fp(body));
    expect(fp(body, 'PUT')).not.toBe(fp(body));
  });

  it('tells apart a JSON string, the same text as a raw body, and bytes', () => {
    expect(fp('"x"')).not.toBe(fp('x'));
    expect(fp(Buffer.from('{}'))).not.toBe(fp({}));
    expect(fp(undefined)).toBe(fp(null));
  });
});

describe('multipart fingerprint', () => {
  const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]);
  const jpg = Buffer.from([0xff, 0xd8, 0xff, 9, 9]);
  const parts = {
    fields: { model: 'img-1', prompt: 'make it blue', n: 1 },
    files: [
      { name: 'image[]', filename: 'a.png', data: png },
      { name: 'image[]', filename: 'b.jpg', data: jpg },
    ],
  };
  const fpp = (p: typeof parts) => fingerprintParts('POST', '/v1/images/edits', p);

  it('is the same for the same fields and files, whatever the field order', () => {
    expect(fpp({ ...parts, fields: { n: 1, prompt: 'make it blue', model: 'img-1' } })).toBe(fpp(parts));
    expect(fpp({ ...parts, files: parts.files.map((f) => ({ ...f, data: Buffer.from(f.data) })) })).toBe(fpp(parts));
  });

  it('changes with one byte of a file, a file name, or the order of the files', () => {
    const flipped = Buffer.from(png);
    flipped[6] = 4;
    expect(fpp({ ...parts, files: [{ ...parts.files[0]!, data: flipped }, parts.files[1]!] })).not.toBe(fpp(parts));
    expect(fpp({ ...parts, files: [{ ...parts.files[0]!, filename: 'c.png' }, parts.files[1]!] })).not.toBe(fpp(parts));
    expect(fpp({ ...parts, files: [parts.files[1]!, parts.files[0]!] })).not.toBe(fpp(parts));
  });

  it('changes with a field value', () => {
    expect(fpp({ ...parts, fields: { ...parts.fields, prompt: 'make it red' } })).not.toBe(fpp(parts));
  });
});
