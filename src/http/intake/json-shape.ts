/** The bounds on the structure of a JSON body, checked before it is parsed. */
export interface JsonBounds {
  /** Containers (objects and arrays) nested inside one another. */
  readonly depth: number;
  /** Containers plus the commas between their items: about the number of values in the body. */
  readonly items: number;
}

/**
 * 128 levels: far beyond any real request (a tool schema nests a few dozen at most), and far below
 * what the gateway's own recursive code (serialising, translating, fingerprinting a body) can take.
 * 200,000 items: about ten thousand chat messages; parsing that many small values takes tens of
 * megabytes, where a body of the same size made only of `[]` would take hundreds and seconds of CPU.
 */
export const JSON_BOUNDS: JsonBounds = { depth: 128, items: 200_000 };

/**
 * Why a JSON text is over the bounds, or null. One pass over the text without building anything;
 * strings are skipped with indexOf, so a body made of long strings (base64 images) costs
 * little. The text is not validated: JSON.parse does that afterwards, so a text that
 * is not JSON may pass here and still be refused there.
 */
export function jsonBoundsProblem(text: string, bounds: JsonBounds = JSON_BOUNDS): string | null {
  let depth = 0;
  let items = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      i = closingQuote(text, i);
      if (i < 0) return null; // an unterminated string: not JSON, JSON.parse says so
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > bounds.depth) return `the JSON body is nested more than ${bounds.depth} levels deep`;
      if (++items > bounds.items) return tooMany(bounds);
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
    } else if (c === 0x2c) {
      if (++items > bounds.items) return tooMany(bounds);
    }
  }
  return null;
}

/** True when a JSON text holds a NUL character (only ever written as the escape `\u0000`, as JSON
 * allows no raw control characters): an escape is one when an odd run of backslashes leads it. */
export function hasNulEscape(text: string): boolean {
  for (let at = text.indexOf('\\u0000'); at >= 0; at = text.indexOf('\\u0000', at + 1)) {
    let backslashes = 1;
    while (text.charCodeAt(at - backslashes) === 0x5c) backslashes++;
    if (backslashes % 2 === 1) return true;
  }
  return false;
}

/** The index of the quote that closes the string opened at `open`, or -1. */
function closingQuote(text: string, open: number): number {
  let at = open;
  for (;;) {
    at = text.indexOf('"', at + 1);
    if (at < 0) return -1;
    let backslashes = 0;
    while (text.charCodeAt(at - 1 - backslashes) === 0x5c) backslashes++;
    if (backslashes % 2 === 0) return at;
  }
}

const tooMany = (bounds: JsonBounds) => `the JSON body has more than ${bounds.items.toLocaleString('en-US')} values (objects, arrays and their items)`;

/**
 * The longest string of a JSON body, watched as the body arrives: `feed` each chunk as it comes and it
 * says, at the byte that passes `limit`, that a string (a key or a value, counted in bytes as sent,
 * escapes included) is longer than allowed. Lets a route whose strings are bounded (a data-URI image)
 * refuse a body before the rest of it arrives. Works on bytes: a quote or a backslash is never part
 * of a multi-byte UTF-8 character. Like `jsonBoundsProblem` it does not validate: a text that is not
 * JSON is the parser's to refuse.
 */
export class StringLengthWatch {
  private inString = false;
  /** The previous byte was a backslash that escapes the next one. */
  private escaped = false;
  private length = 0;

  constructor(readonly limit: number) {}

  /** True once a string is longer than the limit (then the rest need not be fed). */
  feed(chunk: Uint8Array): boolean {
    const end = chunk.length;
    let i = 0;
    // Where the next quote and backslash are in this chunk (`end` when there is none), found once
    // each: a chunk is scanned in linear time however many escapes it holds.
    let quote = -1;
    let backslash = -1;
    while (i < end) {
      if (!this.inString) {
        if (quote < i) quote = indexOr(chunk, 0x22, i, end);
        if (quote === end) return false;
        this.inString = true;
        this.length = 0;
        i = quote + 1;
        continue;
      }
      if (this.escaped) {
        this.escaped = false;
        this.length += 1;
        i += 1;
        if (this.length > this.limit) return true;
        continue;
      }
      if (quote < i) quote = indexOr(chunk, 0x22, i, end);
      if (backslash < i) backslash = indexOr(chunk, 0x5c, i, end);
      const stop = Math.min(quote, backslash);
      this.length += stop - i;
      if (this.length > this.limit) return true;
      if (stop === end) return false;
      if (stop === backslash) {
        this.escaped = true;
        this.length += 1;
      } else {
        this.inString = false;
      }
      i = stop + 1;
    }
    return this.length > this.limit;
  }
}

function indexOr(chunk: Uint8Array, byte: number, from: number, none: number): number {
  const at = chunk.indexOf(byte, from);
  return at < 0 ? none : at;
}
