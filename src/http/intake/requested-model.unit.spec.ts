import { Readable } from 'node:stream';
import type { IncomingMessage } from 'node:http';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MultipartModel, multipartBoundary, readRequestedModel, TopLevelModel } from './requested-model';

const RUNS = Math.min(Number(process.env.FC_RUNS ?? 1_000), 1_000);

/** The scan of `text` fed in pieces cut at `cuts` (byte offsets, any order). */
function scan(text: string | Buffer, cuts: readonly number[] = []): TopLevelModel {
  const bytes = typeof text === 'string' ? Buffer.from(text, 'utf8') : text;
  const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const scanner = new TopLevelModel();
  let from = 0;
  for (const cut of [...at, bytes.length]) {
    scanner.feed(bytes.subarray(from, cut));
    from = cut;
  }
  return scanner;
}

/** Strings full of what a naive scan would take for structure, or for the key. */
const tricky = fc.string({ unit: fc.constantFrom('"', '\\', '[', ']', '{', '}', ',', ':', 'a', 'é', '😀', '\u0000', '\n', 'model') });
const json = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, tricky, fc.integer(), fc.constant(null), fc.boolean(), tie('array'), tie('object')),
  array: fc.array(tie('value'), { maxLength: 4 }),
  object: fc.dictionary(tricky, tie('value'), { maxKeys: 4 }),
})).value;

describe('TopLevelModel: the model a JSON body names, without parsing it', () => {
  it('finds it wherever it is among the top-level keys (the Python SDKs send it after the messages)', () => {
    const messages = [{ role: 'user', content: 'x'.repeat(100_000) }];
    expect(scan(JSON.stringify({ model: 'gpt-4o', messages })).model).toBe('gpt-4o');
    expect(scan(JSON.stringify({ messages, model: 'gpt-4o' })).model).toBe('gpt-4o');
    expect(scan(JSON.stringify({ messages, model: 'gpt-4o' }, null, 2)).model).toBe('gpt-4o');
  });

  it('only a top-level string named model: not a nested one, not one inside a text, not a non-string', () => {
    expect(scan('{"messages":[{"role":"user","content":"\\"model\\": \\"fake\\"","model":"nested"}],"metadata":{"model":"m2"}}').model).toBeUndefined();
    expect(scan('{"input":"say \\\\","model":"real"}').model).toBe('real');
    expect(scan('{"model":42}').model).toBeUndefined();
    expect(scan('{"model":{"id":"x"}}').model).toBeUndefined();
    expect(scan('["model","x"]').model).toBeUndefined();
    expect(scan('"model"').model).toBeUndefined();
    expect(scan('').model).toBeUndefined();
  });

  it('reads escapes as JSON does, and takes the last of two model keys as JSON.parse does', () => {
    expect(scan('{"mod\\u0065l":"caf\\u00e9 \\"x\\""}').model).toBe('café "x"');
    expect(scan('{"model":"first","model":"second"}').model).toBe('second');
    expect(scan('{"model":"first","model":null}').model).toBeUndefined();
    // A value too long to keep (the call log keeps 256 characters) is not known rather than cut.
    expect(scan(JSON.stringify({ model: 'm'.repeat(5_000) })).model).toBeUndefined();
    expect(scan(JSON.stringify({ ['model'.repeat(10)]: 'x', model: 'ok' })).model).toBe('ok');
  });

  it('is done at the end of the top-level object; a text that is no JSON names nothing usable', () => {
    const scanner = scan('{"model":"a"} trailing');
    expect([scanner.done, scanner.model]).toEqual([true, 'a']);
    expect(scan('{"model":"a", "messages": [').done).toBe(false);
    expect(scan('{"model":"a", "messages": [').model).toBe('a');
    expect(scan('<html>').done).toBe(true);
  });

  it('finds what JSON.parse finds in any object, whatever the cuts between chunks (inside escapes and characters too)', () => {
    fc.assert(
      fc.property(
        fc.dictionary(tricky, json, { maxKeys: 5 }),
        fc.option(fc.oneof(tricky, fc.integer(), fc.constant(null))),
        fc.nat(6),
        fc.boolean(),
        fc.array(fc.nat(), { maxLength: 12 }),
        (rest, model, position, pretty, cuts) => {
          const entries = Object.entries(rest).filter(([k]) => k !== 'model');
          if (model !== null) entries.splice(Math.min(position, entries.length), 0, ['model', model]);
          const value = Object.fromEntries(entries);
          const text = pretty ? JSON.stringify(value, null, 2) : JSON.stringify(value);
          const named = (JSON.parse(text) as { model?: unknown }).model;
          const scanner = scan(text, cuts);
          expect(scanner.done).toBe(true);
          expect(scanner.model).toBe(typeof named === 'string' ? named : undefined);
        },
      ),
      { numRuns: RUNS },
    );
  });
});

describe('readRequestedModel: from a request stream nobody has read', () => {
  const stream = (chunks: readonly (string | Buffer)[]) => Readable.from(chunks.map((c) => Buffer.from(c))) as unknown as IncomingMessage;

  it('reads until the object ends, then lets the rest flow away', async () => {
    const raw = stream(['{"messages":[{"role":"user","content":"hi"}],', '"model":"gpt-4o"}', 'ignored']);
    expect(await readRequestedModel(raw, 1_000, 1_000)).toBe('gpt-4o');
  });

  it('stops at the byte limit and at the time limit with what it found so far', async () => {
    expect(await readRequestedModel(stream(['{"messages":"', 'x'.repeat(2_000), '","model":"late"}']), 1_000, 1_000)).toBeUndefined();
    const slow = new Readable({ read() {} });
    slow.push('{"model":"early","messages":[');
    const started = Date.now();
    expect(await readRequestedModel(slow as unknown as IncomingMessage, 1_000, 50)).toBe('early');
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it('answers at once for a stream that has ended', async () => {
    const raw = stream(['{"model":"x"}']);
    raw.resume();
    await new Promise((resolve) => raw.once('end', resolve));
    expect(await readRequestedModel(raw, 1_000, 5_000)).toBeUndefined();
  });
});

/** A multipart body as a client (undici's FormData, as fetch and the openai SDK build it) sends it. */
async function multipart(parts: ReadonlyArray<{ name: string; value: string; file?: string }>): Promise<{ bytes: Buffer; boundary: string }> {
  const form = new FormData();
  for (const part of parts) {
    if (part.file !== undefined) form.append(part.name, new Blob([part.value], { type: 'image/png' }), part.file);
    else form.append(part.name, part.value);
  }
  const response = new Response(form);
  const boundary = multipartBoundary(response.headers.get('content-type') ?? '')!;
  return { bytes: Buffer.from(await response.arrayBuffer()), boundary };
}

function scanParts(bytes: Buffer, boundary: string, cuts: readonly number[] = []): MultipartModel {
  const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const scanner = new MultipartModel(boundary);
  let from = 0;
  for (const cut of [...at, bytes.length]) {
    scanner.feed(bytes.subarray(from, cut));
    from = cut;
  }
  return scanner;
}

describe('MultipartModel: the model field of a multipart body, without parsing it', () => {
  it('finds the first text field named model, after files and other fields, however the bytes are cut', async () => {
    const tricky = fc.string({ unit: fc.constantFrom('-', '\r', '\n', 'model', 'name="model"', 'a', 'é', '"', ';') });
    const part = fc.record({ name: fc.constantFrom('prompt', 'image', 'n', 'mask', 'models', 'model[]'), value: tricky, file: fc.option(fc.constantFrom('a.png', 'model'), { nil: undefined }) });
    await fc.assert(
      fc.asyncProperty(fc.array(part, { maxLength: 4 }), fc.array(part, { maxLength: 3 }), tricky, fc.array(fc.nat(), { maxLength: 8 }), async (before, after, model, cuts) => {
        const { bytes, boundary } = await multipart([...before, { name: 'model', value: model }, ...after, { name: 'model', value: 'second' }]);
        expect(scanParts(bytes, boundary, cuts).model).toBe(model.replace(/\r\n|\r|\n/g, '\r\n'));
      }),
      { numRuns: Math.min(RUNS, 300) },
    );
  });

  it('a file part named model is no model; a body without the field names none', async () => {
    const file = await multipart([{ name: 'model', value: 'not-a-model', file: 'model.png' }, { name: 'prompt', value: 'x' }]);
    expect(scanParts(file.bytes, file.boundary).model).toBeUndefined();
    expect(scanParts(file.bytes, file.boundary).done).toBe(true);
    expect(multipartBoundary('multipart/form-data; boundary="a b"')).toBe('a b');
    expect(multipartBoundary('application/json')).toBeNull();
  });

  it('reads a stream within its limit: a model named before the limit is kept', async () => {
    const { bytes, boundary } = await multipart([{ name: 'model', value: 'img-model' }, { name: 'image', value: 'x'.repeat(100_000), file: 'a.png' }]);
    const raw = Readable.from([bytes.subarray(0, 200), bytes.subarray(200)]) as unknown as IncomingMessage;
    expect(await readRequestedModel(raw, 1_000, 1_000, new MultipartModel(boundary))).toBe('img-model');
  });
});
