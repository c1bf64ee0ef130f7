import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer, type Socket } from 'node:net';

/**
 * A local HTTP server of media files for the probe's tests, with the misbehaviours the probe must
 * survive, chosen by query: `?nohead` (HEAD answered 405), `?norange` (Range ignored: 200 with the whole
 * body), `?trickle` (the body one byte per 50 ms). `/redirect?to=URL` answers 302, `/loop` redirects to itself; an unknown path 404.
 */

export interface Seen {
  readonly method: string;
  readonly path: string;
  readonly range: string | undefined;
  readonly host: string | undefined;
}

export interface MediaServer {
  readonly origin: string;
  readonly port: number;
  /** Every request, in order. */
  readonly seen: Seen[];
  close(): Promise<void>;
}

export async function startMediaServer(files: Readonly<Record<string, { body: Buffer; type: string }>>): Promise<MediaServer> {
  const seen: Seen[] = [];
  const timers = new Set<NodeJS.Timeout>();
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://local');
    seen.push({ method: req.method ?? '', path: url.pathname, range: req.headers.range, host: req.headers.host });
    if (url.pathname === '/redirect' || url.pathname === '/loop') {
      res.writeHead(302, { location: url.searchParams.get('to') ?? '/loop' }).end();
      return;
    }
    const file = files[url.pathname.replace(/^\/+/, '')];
    if (!file) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    if (req.method === 'HEAD' && url.searchParams.has('nohead')) {
      res.writeHead(405, { allow: 'GET' }).end();
      return;
    }
    const range = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
    let status = 200;
    let body = file.body;
    const headers: Record<string, string | number> = { 'content-type': file.type, 'accept-ranges': url.searchParams.has('norange') ? 'none' : 'bytes' };
    if (range && !url.searchParams.has('norange') && req.method === 'GET') {
      const start = Number(range[1]);
      const end = Math.min(range[2] ? Number(range[2]) : file.body.length - 1, file.body.length - 1);
      if (start >= file.body.length) {
        res.writeHead(416, { 'content-range': `bytes */${file.body.length}` }).end();
        return;
      }
      status = 206;
      body = file.body.subarray(start, end + 1);
      headers['content-range'] = `bytes ${start}-${end}/${file.body.length}`;
    }
    headers['content-length'] = req.method === 'HEAD' ? file.body.length : body.length;
    res.writeHead(status, headers);
    if (req.method === 'HEAD') return void res.end();
    if (!url.searchParams.has('trickle')) return void res.end(body);
    let at = 0;
    const drip = setInterval(() => {
      if (at >= body.length || res.destroyed) {
        clearInterval(drip);
        timers.delete(drip);
        return void res.end();
      }
      res.write(body.subarray(at, ++at));
    }, 50);
    timers.add(drip);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    origin: `http://127.0.0.1:${port}`,
    port,
    seen,
    async close() {
      for (const t of timers) clearInterval(t);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A server that accepts connections and sends its status line and headers a byte at a time, forever:
 * a slow-loris answer that no header time-out of a few seconds catches early. */
export async function startTricklingServer(): Promise<{ origin: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: TcpServer = createTcpServer((socket) => {
    sockets.add(socket);
    const answer = Buffer.from('HTTP/1.1 200 OK\r\ncontent-type: image/png\r\nx-slow: ' + 'a'.repeat(10_000));
    let at = 0;
    const drip = setInterval(() => {
      if (socket.destroyed || at >= answer.length) return void clearInterval(drip);
      socket.write(answer.subarray(at, ++at));
    }, 50);
    socket.on('close', () => {
      clearInterval(drip);
      sockets.delete(socket);
    });
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    origin: `http://127.0.0.1:${port}`,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
