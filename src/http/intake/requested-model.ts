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

/** Bytes kept of one part's headers: a `Content-Disposition` naming a field is far shorter. */
const PART_HEADER_BYTES = 8 * 1024;
const CRLF = Buffer.from('\r\n');
const HEADERS_END = Buffer.from('\r\n\r\n');
const DASHES = 0x2d;

/** Whether a part's headers make it the text field `model`: `Content-Disposition: form-data; name="model"`
 * without a `filename` (a part with one is a file). */
function isModelField(headers: string): boolean {
  const disposition = /^content-disposition:([^\r\n]*)$/im.exec(headers)?.[1];
  if (disposition === undefined || !/^\s*form-data\s*;/i.test(disposition)) return false;
  return /;\s*name\s*=\s*(?:"model"|model)\s*(?:;|$)/i.test(disposition) && !/;\s*filename\*?\s*=/i.test(disposition);
}

/**
 * The `model` text field of a multipart/form-data body (RFC 7578), found in one pass as its bytes arrive:
 * each part's headers are read (at most PART_HEADER_BYTES of them), every other part's content is skipped
 * with `indexOf` for the next delimiter, and nothing is kept but the model's value (at most VALUE_BYTES) and
 * a delimiter's length of the bytes before a chunk's end (a delimiter may span two chunks). The first
 * `model` field is taken (the image routes refuse a body with two); the scan is then done. For the
 * call-log row of a refusal, like TopLevelModel: a malformed body names nothing, harmlessly.
 */
export class MultipartModel {
  model: string | undefined = undefined;
  done = false;
  /** `\r\n--boundary`: the body is read as if it began with a CRLF, so the first delimiter has one too. */
  private readonly delimiter: Buffer;
  private state: 'skip' | 'after-delimiter' | 'headers' | 'value' = 'skip';
  /** Bytes of the last chunk not yet decided (part of a delimiter, of the headers, of the CRLF after a delimiter). */
  private carry: Buffer = CRLF;
  private value: Buffer[] = [];
  private valueBytes = 0;

  constructor(boundary: string) {
    this.delimiter = Buffer.from(`\r\n--${boundary}`, 'latin1');
  }

  feed(chunk: Buffer): void {
    if (this.done) return;
    const data = this.carry.length > 0 ? Buffer.concat([this.carry, chunk]) : chunk;
    this.carry = Buffer.alloc(0);
    let i = 0;
    while (!this.done) {
      if (this.state === 'skip' || this.state === 'value') {
        const at = data.indexOf(this.delimiter, i);
        // Up to a delimiter's length at the end may be the start of one: kept for the next chunk.
        const end = at === -1 ? Math.max(i, data.length - (this.delimiter.length - 1)) : at;
        if (this.state === 'value') this.keepValue(data.subarray(i, end));
        if (at === -1) return this.hold(data, end);
        if (this.state === 'value') return this.found();
        i = at + this.delimiter.length;
        this.state = 'after-delimiter';
      } else if (this.state === 'after-delimiter') {
        if (data.length - i < 2) return this.hold(data, i);
        // `--` after a delimiter closes the body.
        if (data[i] === DASHES && data[i + 1] === DASHES) {
          this.done = true;
          return;
        }
        this.state = 'headers';
      } else {
        // The CRLF that ends the delimiter's line is the first of the headers' end when a part has none.
        const lineEnd = data.indexOf(CRLF, i);
        const end = lineEnd === -1 ? -1 : data.indexOf(HEADERS_END, lineEnd);
        if (end === -1) {
          if (data.length - i > PART_HEADER_BYTES) this.state = 'skip';
          else return this.hold(data, i);
          continue;
        }
        this.state = isModelField(data.toString('latin1', lineEnd + 2, end)) ? 'value' : 'skip';
        // The content ends where the next delimiter (its CRLF included) begins.
        i = end + HEADERS_END.length;
      }
    }
  }

  private hold(data: Buffer, from: number): void {
    this.carry = Buffer.from(data.subarray(from));
  }

  private keepValue(bytes: Buffer): void {
    this.valueBytes += bytes.length;
    // Too long to be a model the call log keeps: not known.
    if (this.valueBytes > VALUE_BYTES) {
      this.done = true;
      return;
    }
    if (bytes.length > 0) this.value.push(Buffer.from(bytes));
  }

  private found(): void {
    this.model = Buffer.concat(this.value).toString('utf8');
    this.done = true;
  }
}

/** The boundary of a `multipart/form-data` content type; null when it is not one. */
export function multipartBoundary(contentType: string | undefined): string | null {
  if (!contentType || !/^\s*multipart\/form-data\s*(;|$)/i.test(contentType)) return null;
  const match = /;\s*boundary=(?:"([^"]{1,70})"|([^\s;"]{1,70}))/i.exec(contentType);
  return match ? (match[1] ?? match[2]!) : null;
}

/** What finds the model in a body's bytes: the JSON scan or the multipart one. */
export interface ModelScan {
  readonly model: string | undefined;
  readonly done: boolean;
  feed(chunk: Buffer): void;
}

/**
 * The model a request's body names, read from the request stream that nobody has read yet, as the body
 * arrives: at most `limit` bytes (the route's own limit for that form of body: what the call would have
 * read had it been admitted) and for at most `waitMs`; then whatever was found (undefined: nothing). Once
 * the scan is done (the JSON's top-level object has ended, the multipart `model` field was read), or past
 * either bound, the rest of the body is left to flow away unread, as Node drains any body nobody reads.
 */
export function readRequestedModel(raw: IncomingMessage, limit: number, waitMs: number, scan: ModelScan = new TopLevelModel()): Promise<string | undefined> {
  if (raw.readableEnded || raw.destroyed) return Promise.resolve(undefined);
  return new Promise((resolve) => {
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
      // The bytes within the limit are still read: a model named before it is kept.
      const room = limit - received;
      received += chunk.length;
      if (room <= 0) return finish();
      scan.feed(chunk.length > room ? chunk.subarray(0, room) : chunk);
      if (received > limit) return finish();
      if (scan.done) finish();
    };
    const timer = setTimeout(finish, waitMs);
    raw.on('data', onData);
    raw.on('end', finish);
    raw.on('error', finish);
    raw.on('close', finish);
  });
}
