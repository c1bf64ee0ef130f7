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
