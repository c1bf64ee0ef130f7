/** What to send for a request's `Range` header (RFC 9110 §14): the whole object, one slice of it
 * (`end` inclusive), or a 416. */
export type ByteRange = { readonly kind: 'whole' } | { readonly kind: 'slice'; readonly start: number; readonly end: number } | { readonly kind: 'unsatisfiable' };

const WHOLE: ByteRange = { kind: 'whole' };
const UNSATISFIABLE: ByteRange = { kind: 'unsatisfiable' };

/**
 * One `bytes=` range of an object of `size` bytes. The RFC lets a server ignore a Range, and this one
 * does for another unit, for several ranges (players ask for one; a multipart answer is not worth its
 * code) and under `If-Range` (no validator is ever sent, so none can match). A `bytes=` range it
 * cannot read, or one that starts past the end, is unsatisfiable.
 */
export function byteRange(header: string | undefined, size: number, ifRange?: string): ByteRange {
  if (header === undefined || ifRange !== undefined) return WHOLE;
  const unit = /^\s*bytes\s*=(.*)$/i.exec(header);
  if (!unit) return WHOLE;
  const spec = unit[1]!.trim();
  if (spec.includes(',')) return WHOLE;
  const match = /^(\d*)\s*-\s*(\d*)$/.exec(spec);
  if (!match || (match[1] === '' && match[2] === '')) return UNSATISFIABLE;
  if (match[1] === '') {
    const suffix = Number(match[2]);
    if (suffix === 0 || size === 0) return UNSATISFIABLE;
    return { kind: 'slice', start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(match[1]);
  const last = match[2] === '' ? Infinity : Number(match[2]);
  if (last < start || start >= size) return UNSATISFIABLE;
  return { kind: 'slice', start, end: Math.min(last, size - 1) };
}
