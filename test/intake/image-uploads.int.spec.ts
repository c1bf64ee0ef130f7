/**
 * The files of a multipart image edit are never held whole in memory (issue 31, item 4: what one request
 * carries must never change what other tenants get). Each file part goes to DATA_DIR/uploads as it
 * arrives, counted against the 95 MB as it comes, is sent upstream from there, and is deleted once the
 * call is over, however it ends: an answer, a refusal, a client that left, an async task's end.
 * Before, every part was buffered, so a few concurrent 95 MB uploads pinned hundreds of MB of the heap.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream, mkdtempSync, openAsBlob, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { FormData as UndiciFormData, request } from 'undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { GatewayConfig } from '../../src/config/schema';
import { startSimulatedGateway, type SimulatedGateway } from '../support/gateway';
import { chunk, noneSpooled, sendPartial, spooledFiles } from './support';

type Json = Record<string, any>;

const MiB = 1024 * 1024;
const BIG = 40 * MiB;

// A full collection before each reading, so that what is measured is what is still reachable.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
/** The process's live JavaScript heap plus its ArrayBuffers (every Buffer's bytes). */
function liveBytes(): number {
  gc();
  gc();
  const usage = process.memoryUsage();
  return usage.heapUsed + usage.arrayBuffers;
}

interface ReceivedFile {
  readonly field: string;
  readonly filename: string;
  readonly size: number;
  readonly sha256: string;
}
interface Received {
  readonly path: string;
  readonly fields: Record<string, string>;
  readonly files: ReceivedFile[];
  /** liveBytes() when the request reached the upstream: the gateway has read the client's whole upload by then. */
  readonly liveAtArrival: number;
}

/** An images upstream that records what it got (file digests, not bytes) and what the process kept alive
 * when the gateway's request arrived, before it reads a byte of it. */
class Upstream {
  readonly received: Received[] = [];
  /** This many next requests answer 500 (the ladder then tries the next channel). */
  failNext = 0;
  private server!: Server;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
  }

  private async handle(req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) {
    const liveAtArrival = liveBytes();
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const form = await new Response(Buffer.concat(chunks), { headers: { 'content-type': String(req.headers['content-type']) } }).formData();
    const fields: Record<string, string> = {};
    const files: ReceivedFile[] = [];
    for (const [name, value] of form.entries()) {
      if (typeof value === 'string') fields[name] = value;
      else {
        const bytes = Buffer.from(await value.arrayBuffer());
        files.push({ field: name, filename: value.name, size: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') });
      }
    }
    this.received.push({ path: req.url ?? '', fields, files, liveAtArrival });
    if (this.failNext > 0) {
      this.failNext -= 1;
      res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'upstream broke', type: 'server_error' } }));
      return;
    }
    const created = Math.floor(Date.now() / 1000);
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ created, data: [{ url: 'https://cdn.example/edited.png' }], usage: { input_tokens: 1, output_tokens: 1 } }));
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

function config(upstream: Upstream): GatewayConfig {
  const channel = (id: string, priority: number) => ({
    id,
    protocol: 'images' as const,
    base_url: `${upstream.url}/${id}`,
    api_key: `key-${id}`,
    group: 'default',
    priority,
    weight: 1,
    models: { 'img-model': 'img-model-upstream' },
    tools: [],
  });
  return {
    models: [{ id: 'img-model', kind: 'image', endpoint_type: 'images_generations', owned_by: 'test', aliases: [], callable: true, capabilities: [], price: { per_image: '0.04' } }],
    channels: [channel('img-a', 0), channel('img-b', 1)],
  };
}

let upstream: Upstream;
let h: SimulatedGateway;
let key: string;
let scratch: string;
/** A 40 MB file of random bytes on disk (the client sends it from there: the test process holds no copy). */
let big: { path: string; sha256: string };

async function randomFile(path: string, size: number): Promise<string> {
  const hash = createHash('sha256');
  const out = createWriteStream(path);
  for (let at = 0; at < size; at += MiB) {
    const piece = randomBytes(Math.min(MiB, size - at));
    hash.update(piece);
    if (!out.write(piece)) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
  }
  await new Promise<void>((resolve, reject) => out.end((error?: Error | null) => (error ? reject(error) : resolve())));
  return hash.digest('hex');
}

beforeAll(async () => {
  upstream = new Upstream();
  await upstream.start();
  h = await startSimulatedGateway(() => config(upstream));
  key = (await h.t.accountWithKey()).key;
  scratch = mkdtempSync(join(tmpdir(), 'image-uploads-test-'));
  big = { path: join(scratch, 'big.png'), sha256: await randomFile(join(scratch, 'big.png'), BIG) };
});
afterAll(async () => {
  await h?.close();
  await upstream?.close();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});
beforeEach(() => {
  upstream.received.length = 0;
  upstream.failNext = 0;
});

const spooled = () => spooledFiles(h.t.dataDir);
const noSpooledFiles = () => noneSpooled(h.t.dataDir);

async function edit(form: FormData): Promise<Response> {
  return fetch(`${h.baseUrl}/v1/images/edits`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
}

function editForm(file: Blob, filename: string, extra: Record<string, string> = {}): FormData {
  const form = new FormData();
  form.append('model', 'img-model');
  form.append('prompt', 'make it blue');
  for (const [name, value] of Object.entries(extra)) form.append(name, value);
  form.append('image', file, filename);
  return form;
}

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

describe('multipart image edits: files go through disk, not memory', () => {
  it('a 40 MB file reaches the upstream byte for byte, the gateway keeping far less than 40 MB of it alive, and no file is left', async () => {
    // A small edit first: whatever the first call loads or grows once is not counted below.
    const small = Buffer.from('a small image');
    expect((await edit(editForm(new Blob([small], { type: 'image/png' }), 'small.png'))).status).toBe(200);
    expect(upstream.received[0]!.files).toEqual([{ field: 'image', filename: 'small.png', size: small.length, sha256: sha256(small) }]);
    await noSpooledFiles();
    upstream.received.length = 0;

    // Sent with undici's request(), which streams the file from disk and keeps nothing of it (fetch keeps
    // what it sent until the exchange is over, in this very process).
    const form = new UndiciFormData();
    form.append('model', 'img-model');
    form.append('prompt', 'make it blue');
    form.append('image', await openAsBlob(big.path, { type: 'image/png' }), 'big.png');
    const before = liveBytes();
    const response = await request(`${h.baseUrl}/v1/images/edits`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
    expect(response.statusCode).toBe(200);
    expect(((await response.body.json()) as Json).data).toEqual([{ url: 'https://cdn.example/edited.png' }]);
    const [sent] = upstream.received;
    expect(sent!.path).toBe('/img-a/v1/images/edits');
    expect(sent!.fields).toMatchObject({ model: 'img-model-upstream', prompt: 'make it blue' });
    expect(sent!.files).toEqual([{ field: 'image', filename: 'big.png', size: BIG, sha256: big.sha256 }]);
    // Buffered, the file would be alive in the gateway (its request's parsed body) while the upstream
    // reads it: 40 MB and more. Spooled, a few chunks in flight. A generous margin for everything else.
    const grown = sent!.liveAtArrival - before;
    expect(grown, `the process kept ${(grown / MiB).toFixed(1)} MB more alive while the upstream read the edit`).toBeLessThan(BIG / 4);
    await noSpooledFiles();
  });

  it('a channel that fails gets the file, and so does the next one, read again from disk; then it is deleted', async () => {
    upstream.failNext = 1;
    const bytes = randomBytes(3 * MiB);
    const response = await edit(editForm(new Blob([bytes], { type: 'image/png' }), 'retry.png'));
    expect(response.status).toBe(200);
    expect(upstream.received.map((r) => r.path)).toEqual(['/img-a/v1/images/edits', '/img-b/v1/images/edits']);
    for (const sent of upstream.received) expect(sent.files).toEqual([{ field: 'image', filename: 'retry.png', size: bytes.length, sha256: sha256(bytes) }]);
    await noSpooledFiles();
  });

  it('an async edit keeps its file until its task has run, then deletes it', async () => {
    const bytes = randomBytes(2 * MiB);
    const response = await edit(editForm(new Blob([bytes], { type: 'image/png' }), 'later.png', { async: 'true' }));
    expect(response.status).toBe(200);
    const { id } = (await response.json()) as { id: string };
    await vi.waitFor(
      async () => {
        const poll = await fetch(`${h.baseUrl}/v1/images/generations/${id}`, { headers: { authorization: `Bearer ${key}` } });
        expect(poll.status).toBe(200);
      },
      { timeout: 10_000, interval: 50 },
    );
    expect(upstream.received).toHaveLength(1);
    expect(upstream.received[0]!.files).toEqual([{ field: 'image', filename: 'later.png', size: bytes.length, sha256: sha256(bytes) }]);
    await noSpooledFiles();
  });

  it('a file over 95 MB is refused at the byte that passes the limit, before the rest is sent, and nothing of it is left', async () => {
    const head = [
      'POST /v1/images/edits HTTP/1.1',
      'Host: gateway.test',
      `authorization: Bearer ${key}`,
      'Content-Type: multipart/form-data; boundary=b',
      'Transfer-Encoding: chunked',
    ].join('\r\n');
    const fields = '--b\r\nContent-Disposition: form-data; name="model"\r\n\r\nimg-model\r\n--b\r\nContent-Disposition: form-data; name="prompt"\r\n\r\nedit\r\n';
    const opening = chunk(`${fields}--b\r\nContent-Disposition: form-data; name="image"; filename="huge.png"\r\nContent-Type: image/png\r\n\r\n`);
    // 96 MB of the file and never its end: an answer can only come from a refusal made on the way.
    const file = Buffer.concat(Array.from({ length: 96 }, () => chunk(Buffer.alloc(MiB, 7))));
    const reply = await sendPartial(h.baseUrl, `${head}\r\n\r\n`, Buffer.concat([opening, file]), { waitMs: 30_000 });
    expect(reply.status).toBe(413);
    expect(JSON.parse(reply.body)).toEqual({
      error: { message: "the request body is over this endpoint's limit of 95 MB", type: 'invalid_request_error', code: 'request_too_large' },
    });
    expect(reply.closed).toBe(true);
    expect(upstream.received).toHaveLength(0);
    await noSpooledFiles();
  });

  it('an upload is on disk while it arrives, and deleted when its client goes away before the end', async () => {
    const declared = 60 * MiB;
    const head = [
      'POST /v1/images/edits HTTP/1.1',
      'Host: gateway.test',
      `authorization: Bearer ${key}`,
      'Content-Type: multipart/form-data; boundary=b',
      `Content-Length: ${declared}`,
    ].join('\r\n');
    const opening = '--b\r\nContent-Disposition: form-data; name="model"\r\n\r\nimg-model\r\n--b\r\nContent-Disposition: form-data; name="image"; filename="left.png"\r\nContent-Type: image/png\r\n\r\n';
    const { port } = new URL(h.baseUrl);
    const socket = connect(Number(port), '127.0.0.1');
    socket.on('error', () => {});
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(`${head}\r\n\r\n${opening}`);
    socket.write(Buffer.alloc(20 * MiB, 9));
    // The bytes received so far are in a file, not in the gateway's memory.
    await vi.waitFor(() => expect(spooled().some((f) => f.size >= 16 * MiB)).toBe(true), { timeout: 10_000, interval: 20 });
    socket.destroy();
    await noSpooledFiles();
    expect(upstream.received).toHaveLength(0);
    expect((await fetch(`${h.baseUrl}/healthz`)).status).toBe(200);
  });
});
