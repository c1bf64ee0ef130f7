import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Readable } from 'node:stream';
import { READ_AHEAD_BYTES, readAhead } from '../../src/upstream/read-ahead';

// A chat call whose hold is still committing when the upstream's stream arrives waits before it
// reads the body. If the upstream cuts the connection meanwhile, the frames that came before the
// cut must still reach the client (and be billed): undici drops what a body had buffered when the
// socket fails, so the relay reads such a body ahead while it waits.

let server: Server;
let url = '';
beforeAll(async () => {
  server = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const frames = req.url === '/many' ? 500 : 3;
    for (let i = 0; i < frames; i++) res.write(`data: {"n":${i}}\n\n`);
    if (req.url === '/cut' || req.url === '/many') res.write('', () => setTimeout(() => req.socket.destroy(), 5));
    else res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

async function drain(body: AsyncIterable<unknown>): Promise<{ text: string; error: unknown }> {
  let text = '';
  try {
    for await (const chunk of body) text += String(chunk);
    return { text, error: null };
  } catch (error) {
    return { text, error };
  }
}

describe('readAhead', () => {
  it('keeps the frames that arrived before the upstream cut the connection, then reports the cut', async () => {
    const plain = await request(`${url}/cut`);
    await sleep(100); // the wait for a commit: the cut happens meanwhile
    const lost = await drain(plain.body);
    // What it guards against: read late, the plain body has lost the frames.
    expect(lost.error).not.toBeNull();
    expect(lost.text).toBe('');

    const response = await request(`${url}/cut`);
    const ahead = readAhead(response.body);
    await sleep(100);
    const kept = await drain(ahead);
    expect(kept.text).toBe('data: {"n":0}\n\ndata: {"n":1}\n\ndata: {"n":2}\n\n');
    expect(kept.error).not.toBeNull();
  });

  it('ends cleanly on a complete body, read late or not', async () => {
    const response = await request(`${url}/whole`);
    const ahead = readAhead(response.body);
    await sleep(50);
    expect(await drain(ahead)).toEqual({ text: 'data: {"n":0}\n\ndata: {"n":1}\n\ndata: {"n":2}\n\n', error: null });
  });

  it('keeps every frame of a larger stream in order, pausing and resuming the body as it is read', async () => {
    const response = await request(`${url}/many`);
    const ahead = readAhead(response.body);
    const { text, error } = await drain(ahead);
    expect(error).not.toBeNull();
    const numbers = [...text.matchAll(/"n":(\d+)/g)].map((m) => Number(m[1]));
    expect(numbers).toEqual(Array.from({ length: 500 }, (_, i) => i));
  });

  it('holds at most READ_AHEAD_BYTES while nobody reads, whatever the size of the chunks, and reads on as it is read', async () => {
    // An upstream answer far larger than any buffer: a chat stream of 18 MB is cheap to ask for.
    const piece = Buffer.alloc(256 * 1024, 'x');
    let produced = 0;
    const body = new Readable({
      read() {
        produced += piece.length;
        this.push(piece);
      },
    });
    const ahead = readAhead(body)[Symbol.asyncIterator]();
    await expect.poll(() => body.isPaused()).toBe(true);
    // What it kept, plus what the paused stream itself buffers (up to one more piece).
    expect(produced).toBeLessThanOrEqual(READ_AHEAD_BYTES + 2 * piece.length);
    for (let i = 0; i < 40; i++) expect((await ahead.next()).value).toHaveLength(piece.length);
    expect(produced).toBeGreaterThanOrEqual(40 * piece.length);
    await ahead.return!();
    expect(body.destroyed).toBe(true);
  });

  it('destroys the body when the reader stops early', async () => {
    const response = await request(`${url}/whole`);
    for await (const chunk of readAhead(response.body)) {
      void chunk;
      break;
    }
    expect(response.body.destroyed).toBe(true);
  });
});
