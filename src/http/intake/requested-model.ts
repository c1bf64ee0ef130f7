import type { IncomingMessage } from 'node:http';

/** Bytes kept of a top-level key (`"model"` is 5; a longer key is not it) and of the model's value
 * (the call log keeps 256 characters of it: CALL_TEXT_LIMITS.model). */
const KEY_BYTES = 16;
const VALUE_BYTES = 4 * 256 + 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * The top-level `"model"` string of a JSON object, found in one pass over its bytes as they arrive,
 * without parsing the body: nothing is kept but a key's first bytes and the model's value, so a body of
 * any size costs its bytes once (the inside of a string is skipped with `indexOf`) and no memory.
 *
 * Used for the call-log row of a call refused before its body was read (402 at authentication, 429 of
 * the rate limits: src/http/plugins/refused-calls.ts). Like JSON.parse, the last `model` key wins. The
 * body is not validated: on a text that is not JSON the answer may be anything or nothing, which is
 * harmless for a row that only names what the client asked for.
 */
export class TopLevelModel {
  /** The model named so far (the last top-level `model` string); undefined: none. */
  model: string | undefined = undefined;
  /** The top-level value has ended (or is not an object): nothing further can name a model. */
  done = false;
  private depth = 0;
  private inString = false;
  private escaped = false;
  /** At depth 1: the next string is a key (after `{` or `,`), not a value (after `:`). */
  private expectKey = false;
  /** At depth 1: the last key was `model` and its value has not started yet. */
  private modelValueNext = false;
  private keyIsModel = false;
  /** What the current string is kept as: a top-level key, the model's value, or nothing. */
  private capture: 'key' | 'value' | null = null;
  private readonly keyBytes = Buffer.allocUnsafe(KEY_BYTES);
  private readonly valueBytes = Buffer.allocUnsafe(VALUE_BYTES);
  private kept = 0;
  private overflow = false;

  feed(chunk: Buffer): void {
    let i = 0;
    while (i < chunk.length && !this.done) {
      if (this.inString) i = this.string(chunk, i);
      else i = this.structure(chunk, i);
    }
  }

  /** Bytes outside strings, up to the next string's opening quote (exclusive of what follows it). */
  private structure(chunk: Buffer, from: number): number {
    for (let i = from; i < chunk.length; i++) {
      const byte = chunk[i]!;
      if (byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09) continue;
      if (this.depth === 0) {
        // The first value must be an object; anything else names no model.
        if (byte !== 0x7b) {
          this.done = true;
          return chunk.length;
        }
        this.depth = 1;
        this.expectKey = true;
        continue;
      }
      const top = this.depth === 1;
      if (byte === QUOTE) {
        this.inString = true;
        if (top && this.expectKey) this.startCapture('key');
        else if (top && this.modelValueNext) this.startCapture('value');
        this.modelValueNext = false;
        return i + 1;
      }
      if (byte === 0x7b || byte === 0x5b) {
        this.depth += 1;
        if (top) this.notAString();
      } else if (byte === 0x7d || byte === 0x5d) {
        this.depth -= 1;
        if (this.depth === 0) {
          this.done = true;
          return chunk.length;
        }
      } else if (top && byte === 0x3a) {
        this.expectKey = false;
        this.modelValueNext = this.keyIsModel;
      } else if (top && byte === 0x2c) {
        this.expectKey = true;
        this.modelValueNext = false;
      } else if (top) {
        // A number, true, false or null.
        this.notAString();
      }
    }
    return chunk.length;
  }

  /** Bytes inside a string, up to and including its closing quote. */
  private string(chunk: Buffer, from: number): number {
    let i = from;
    if (this.escaped) {
      this.escaped = false;
      this.keep(chunk, i, i + 1);
      i += 1;
    }
    // Searched once per string run, not once per escape: a string of many escapes stays linear.
    let quote = chunk.indexOf(QUOTE, i);
    let backslash = chunk.indexOf(BACKSLASH, i);
    for (;;) {
      if (quote !== -1 && quote < i) quote = chunk.indexOf(QUOTE, i);
      if (backslash !== -1 && backslash < i) backslash = chunk.indexOf(BACKSLASH, i);
      const end = quote === -1 ? backslash : backslash === -1 ? quote : Math.min(quote, backslash);
      if (end === -1) {
        this.keep(chunk, i, chunk.length);
        return chunk.length;
      }
      this.keep(chunk, i, end);
      if (chunk[end] === QUOTE) {
        this.inString = false;
        this.endCapture();
        return end + 1;
      }
      // A backslash escapes the next byte, which may be in the next chunk.
      if (end + 1 >= chunk.length) {
        this.keep(chunk, end, end + 1);
        this.escaped = true;
        return chunk.length;
      }
      this.keep(chunk, end, end + 2);
      i = end + 2;
    }
  }

  /** A top-level value that is not a string has started: if it is the model's, the model is no string. */
  private notAString(): void {
    if (this.modelValueNext) this.model = undefined;
    this.modelValueNext = false;
  }

  private startCapture(kind: 'key' | 'value'): void {
    this.capture = kind;
    this.kept = 0;
    this.overflow = false;
  }

  private keep(chunk: Buffer, start: number, end: number): void {
    if (this.capture === null || this.overflow || end <= start) return;
    const into = this.capture === 'key' ? this.keyBytes : this.valueBytes;
    if (this.kept + (end - start) > into.length) {
      this.overflow = true;
      return;
    }
    chunk.copy(into, this.kept, start, end);
    this.kept += end - start;
  }

  private endCapture(): void {
    const kind = this.capture;
    this.capture = null;
    if (kind === null) return;
    const text = this.overflow ? undefined : decoded((kind === 'key' ? this.keyBytes : this.valueBytes).subarray(0, this.kept));
    if (kind === 'key') this.keyIsModel = text === 'model';
    // A value too long to keep still replaces an earlier one, as it would in JSON.parse: not known.
    else this.model = text;
  }
}

/** A JSON string's contents (escapes and all) as the string it stands for; undefined if it is not one. */
function decoded(raw: Buffer): string | undefined {
  try {
    const value: unknown = JSON.parse(`"${raw.toString('utf8')}"`);
    return typeof value === 'string' ? value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The model a request's JSON body names, read from the request stream that nobody has read yet, as the
 * body arrives: at most `limit` bytes (the route's own JSON limit: what the call would have read had it
 * been admitted) and for at most `waitMs`; then whatever was found (undefined: nothing). Once the top-level
 * object has ended, or past either bound, the rest of the body is left to flow away unread, as Node
 * drains any body nobody reads.
 */
export function readRequestedModel(raw: IncomingMessage, limit: number, waitMs: number): Promise<string | undefined> {
  if (raw.readableEnded || raw.destroyed) return Promise.resolve(undefined);
  return new Promise((resolve) => {
    const scan = new TopLevelModel();
    let received = 0;
    const finish = () => {
      clearTimeout(timer);
      raw.off('data', onData);
      raw.off('end', finish);
      raw.off('error', finish);
      raw.off('close', finish);
      // Flowing with no listener: the rest is discarded, not buffered.
      raw.resume();
      resolve(scan.model);
    };
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      if (received > limit) return finish();
      scan.feed(chunk);
      if (scan.done) finish();
    };
    const timer = setTimeout(finish, waitMs);
    raw.on('data', onData);
    raw.on('end', finish);
    raw.on('error', finish);
    raw.on('close', finish);
  });
}
