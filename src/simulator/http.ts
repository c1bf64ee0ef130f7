/** Plumbing shared by the protocol handlers: the request context, body parsing, JSON and SSE writers. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Task } from './protocols/tasks';
import type { ScenarioSet, UploadedFile } from './types';

/** State shared by the handlers of one simulator. */
export interface SimState {
  baseUrl: string;
  /** Anthropic system prompts already seen with caching on (cache_creation first, cache_read after) */
  readonly anthropicCacheSeen: Set<string>;
  /** content-generation tasks of every family, by id */
  readonly tasks: Map<string, Task>;
  /** voice clones, by id */
  readonly voices: Map<string, { readonly id: string; readonly name: string; readonly audioUrl: string }>;
}

export interface Ctx {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly url: URL;
  readonly body: unknown;
  readonly model: string | undefined;
  readonly scenario: ScenarioSet;
  /** request number (ids are derived from it) */
  readonly seq: number;
  readonly sim: SimState;
  readonly signal: AbortSignal;
  /** extra headers every response of this request carries (request ids) */
  readonly headers: Record<string, string>;
}

export function pad(seq: number): string {
  return String(seq).padStart(6, '0');
}

export function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted || ms <= 0) return resolve();
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

export async function readBody(req: IncomingMessage, limit = 100 * 1024 * 1024): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const b = chunk as Buffer;
    size += b.length;
    if (size > limit) throw new Error('request body too large');
    chunks.push(b);
  }
  return Buffer.concat(chunks);
}

/** multipart/form-data → `{...textFields, files}`; a repeated text field becomes an array. */
export function parseMultipart(buf: Buffer, contentType: string): Record<string, unknown> {
  const m = /boundary=(?:"([^"]+)"|([^;]+))/i.exec(contentType);
  const boundary = m?.[1] ?? m?.[2];
  const out: Record<string, unknown> = {};
  const files: UploadedFile[] = [];
  if (!boundary) return { files };
  const delim = Buffer.from(`--${boundary}`);
  let pos = buf.indexOf(delim);
  while (pos !== -1) {
    let start = pos + delim.length;
    if (buf.subarray(start, start + 2).toString() === '--') break;
    if (buf.subarray(start, start + 2).toString() === '\r\n') start += 2;
    const next = buf.indexOf(delim, start);
    if (next === -1) break;
    let end = next;
    if (buf.subarray(end - 2, end).toString() === '\r\n') end -= 2;
    const part = buf.subarray(start, end);
    const headerEnd = part.indexOf('\r\n\r\n');
    if (headerEnd !== -1) {
      const head = part.subarray(0, headerEnd).toString('utf8');
      const content = part.subarray(headerEnd + 4);
      const name = /name="([^"]*)"/i.exec(head)?.[1] ?? '';
      const filename = /filename="([^"]*)"/i.exec(head)?.[1];
      const type = /content-type:\s*([^\r\n]+)/i.exec(head)?.[1]?.trim() ?? 'application/octet-stream';
      if (filename !== undefined) {
        files.push({ field: name, filename, contentType: type, size: content.length });
      } else {
        const value = content.toString('utf8');
        const prev = out[name];
        out[name] = prev === undefined ? value : Array.isArray(prev) ? [...prev, value] : [prev, value];
      }
    }
    pos = next;
  }
  return { ...out, files };
}

function gone(ctx: Ctx): boolean {
  return ctx.signal.aborted || ctx.res.destroyed;
}

export function destroy(ctx: Ctx): void {
  ctx.req.socket.destroy();
}

/** What a 200 answer's body is under `garbage_body`. */
export const GARBAGE_BODY = '<html><body>simulated: this 200 answer is not JSON</body></html>';

/**
 * A JSON answer. With `cut_stream_after` on a 200, the headers (with the full content-length) and the
 * first half of the body are sent and the socket is destroyed; with `garbage_body` a 200's body is
 * GARBAGE_BODY, whatever the work done for it.
 */
export function sendJson(ctx: Ctx, status: number, body: unknown, headers: Record<string, string> = {}, contentType = 'application/json'): void {
  if (gone(ctx)) return;
  // `garbage_body`: the success as a broken proxy or a vendor's bug sends it, still labelled JSON.
  const text = status === 200 && ctx.scenario.garbageBody ? GARBAGE_BODY : JSON.stringify(body);
  const bytes = Buffer.from(text, 'utf8');
  ctx.res.writeHead(status, {
    'content-type': contentType,
    'content-length': String(bytes.length),
    ...ctx.headers,
    ...headers,
  });
  if (status === 200 && ctx.scenario.cutAfter !== undefined) {
    ctx.res.write(bytes.subarray(0, Math.floor(bytes.length / 2)), () => destroy(ctx));
    return;
  }
  ctx.res.end(bytes);
}

/** Raw bytes (audio); `cut_stream_after` cuts them like a JSON body: half, then the socket dies. */
export function sendBytes(ctx: Ctx, contentType: string, bytes: Buffer): void {
  if (gone(ctx)) return;
  ctx.res.writeHead(200, { 'content-type': contentType, 'content-length': String(bytes.length), ...ctx.headers });
  if (ctx.scenario.cutAfter !== undefined) {
    ctx.res.write(bytes.subarray(0, Math.floor(bytes.length / 2)), () => destroy(ctx));
    return;
  }
  ctx.res.end(bytes);
}

export interface StreamSpec {
  readonly contentType: string;
  /** complete frames in order, the terminator (e.g. `data: [DONE]`) last */
  readonly frames: readonly string[];
  /** the in-protocol error frame sent in place of frame `index` */
  readonly errorFrame: (index: number) => string;
  /** wait this long before the error frame so it reaches the client as a read of its own */
  readonly errorGapMs?: number;
}

/**
 * Streams frames with the request's scenario applied: slow_stream between frames, cut_stream_after
 * (socket destroyed after n frames, never after the terminator), error_frame_after (error frame in
 * place of frame n, then a clean end; never after the terminator).
 */
export async function sendStream(ctx: Ctx, spec: StreamSpec): Promise<void> {
  if (gone(ctx)) return;
  const { res } = ctx;
  const last = spec.frames.length - 1;
  const cutAt = ctx.scenario.cutAfter === undefined ? undefined : Math.min(ctx.scenario.cutAfter, last);
  const errorAt = ctx.scenario.errorFrameAfter === undefined ? undefined : Math.min(ctx.scenario.errorFrameAfter, last);
  res.writeHead(200, {
    'content-type': spec.contentType,
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    ...ctx.headers,
  });
  res.flushHeaders();
  const delay = ctx.scenario.streamDelayMs ?? 0;
  let lastWrite: Promise<void> = Promise.resolve();
  for (let i = 0; ; i++) {
    if (i > 0 && delay > 0 && i <= last) await sleep(delay, ctx.signal);
    if (gone(ctx)) return;
    if (i === cutAt) {
      await lastWrite; // everything written so far reaches the client, then the connection dies
      destroy(ctx);
      return;
    }
    if (i === errorAt) {
      if (spec.errorGapMs) await sleep(spec.errorGapMs, ctx.signal);
      if (gone(ctx)) return;
      res.end(spec.errorFrame(i));
      return;
    }
    if (i > last) {
      res.end();
      return;
    }
    const frame = spec.frames[i]!;
    lastWrite = new Promise((resolve) => res.write(frame, () => resolve()));
  }
}

/** `data: <json>\n\n` */
export function dataFrame(payload: unknown): string {
  return `data: ${JSON.stringify(payload)}\n\n`;
}

/** `event: <name>\ndata: <json>\n\n` */
export function eventFrame(name: string, payload: unknown): string {
  return `event: ${name}\ndata: ${JSON.stringify(payload)}\n\n`;
}
