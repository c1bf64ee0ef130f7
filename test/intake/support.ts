import { readdirSync, statSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { expect, vi } from 'vitest';

/** What came back on a raw connection, and whether the server closed it. */
export interface RawExchange {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
  /** The server closed the connection (without the client ever finishing its request). */
  readonly closed: boolean;
}

/**
 * Sends a request head and the given part of a body, never the rest, and waits until the server
 * closes the connection or `waitMs` passes. Shows what inject() cannot: whether the server answers
 * without waiting for a body, and whether it stops reading a body it refused.
 */
export function sendPartial(baseUrl: string, head: string, part: Buffer | string = '', options: { waitMs?: number; trickle?: { chunk: string; everyMs: number } } = {}): Promise<RawExchange> {
  const { port, hostname } = new URL(baseUrl);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    let trickle: NodeJS.Timeout | undefined;
    const finish = (closed: boolean) => {
      clearInterval(trickle);
      clearTimeout(timer);
      socket.destroy();
      resolve({ ...parse(Buffer.concat(chunks).toString('latin1')), closed });
    };
    const timer = setTimeout(() => finish(false), options.waitMs ?? 20_000);
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('close', () => finish(true));
    socket.on('error', () => {});
    socket.on('connect', () => {
      socket.write(head);
      if (part.length) socket.write(part);
      if (options.trickle) {
        const { chunk, everyMs } = options.trickle;
        trickle = setInterval(() => socket.writable && socket.write(chunk), everyMs);
      }
    });
  });
}

function parse(text: string): Omit<RawExchange, 'closed'> {
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return { status: 0, headers: {}, body: text };
  const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(statusLine!.split(' ')[1]), headers, body: text.slice(end + 4) };
}

/** A request head for a JSON body of `length` bytes. */
export function jsonHead(method: string, path: string, length: number | 'chunked', headers: Record<string, string> = {}): string {
  const lines = [`${method} ${path} HTTP/1.1`, 'Host: gateway.test', 'Content-Type: application/json'];
  lines.push(length === 'chunked' ? 'Transfer-Encoding: chunked' : `Content-Length: ${length}`);
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  return `${lines.join('\r\n')}\r\n\r\n`;
}

/** One HTTP/1.1 chunk of a chunked body. */
export const chunk = (data: Buffer | string) => Buffer.concat([Buffer.from(`${Buffer.byteLength(data).toString(16)}\r\n`), Buffer.from(data), Buffer.from('\r\n')]);

/** The files a gateway has spooled in `dataDir/uploads` (multipart image parts), with their sizes. */
export function spooledFiles(dataDir: string): Array<{ name: string; size: number }> {
  const dir = join(dataDir, 'uploads');
  try {
    return readdirSync(dir).map((name) => ({ name, size: statSync(join(dir, name)).size }));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}

/** Resolves once the spool of the gateway at `dataDir` is empty (its files go as their holders let go). */
export const noneSpooled = (dataDir: string) => vi.waitFor(() => expect(spooledFiles(dataDir)).toEqual([]), { timeout: 5_000, interval: 20 });
