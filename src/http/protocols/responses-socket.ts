import type { FastifyInstance, FastifyRequest } from 'fastify';
import { EventEmitter } from 'node:events';
import type { IncomingHttpHeaders, IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { AddressInfo } from 'node:net';
import websocket from '@fastify/websocket';
import type { WebSocket } from 'ws';
import { Agent, request as undiciRequest, type Dispatcher } from 'undici';
import { createParser } from 'eventsource-parser';
import { GatewayError, sendError, upstreamErrorBody } from '../errors';
import type { RouteDoc } from '../openapi/route-doc';
import { tryJson } from '../../upstream/json';
import { SHUTDOWN_MESSAGE } from '../../upstream/upstream-call';
import { MAX_EVENT_CHARS } from './relay-answer';
import { clientFrame, errorEvent, eventType, isTerminal, socketError, warmupEvents } from './responses-socket-frames';
import type { ResponsesSocketSettings } from './responses-socket-settings';

/**
 * `GET /v1/responses` as a WebSocket (issue 36 item 1; docs/responses-websocket.md): Codex's
 * Responses WebSocket mode. Each `response.create` message is served by the HTTP route itself,
 * `POST /v1/responses` with `stream: true`, sent by the gateway to its own listening address with
 * the upgrade's headers (its key): authentication, rate limit and concurrency, hold, channel ladder,
 * settlement, call-log row and receipt are those of an HTTP stream, one per response, with no second
 * copy of any of them. Each SSE event of that stream goes to the socket as one text message (its
 * JSON). Responses on one socket are served one after another.
 */

/** A message larger than a chat body (8 MiB, src/http/intake/body-classes.ts) closes the socket (1009). */
const MAX_MESSAGE_BYTES = 8 * 1024 * 1024 + 64 * 1024;
/** `response.create` messages that may wait behind the one being served; more are refused. */
const MAX_QUEUED = 4;
/** Bytes the socket may hold unsent before the next chunk of the stream is read (back-pressure). */
const HIGH_WATER = 1024 * 1024;
/** Past the response's budget, a socket that still holds unsent bytes (a client that stopped reading) is cut. */
const DEADLINE_GRACE_MS = 5_000;

/** Headers of the upgrade that are the WebSocket's, not the request's; and a proxy's, which the loopback
 * call must not carry (with TRUST_PROXY trusting loopback they would be believed as the client's). */
const SOCKET_HEADERS = new Set([
  'host',
  'connection',
  'upgrade',
  'content-length',
  'transfer-encoding',
  'accept-encoding',
  'keep-alive',
  'te',
  'trailer',
  'proxy-connection',
  'forwarded',
  'x-forwarded-for',
  'x-forwarded-host',
  'x-forwarded-proto',
  'x-real-ip',
]);

const UPGRADE_DOC: RouteDoc = {
  operationId: 'responsesWebSocket',
  summary: 'Responses over a WebSocket (Codex)',
  description:
    'A WebSocket upgrade (`OpenAI-Beta: responses_websockets=...` optional). Each `response.create` message (the fields of a `POST /v1/responses` body, streamed) is answered with the server events of that stream, one JSON text message each, ending with `response.completed`, `response.failed` or an `error` event; each is billed and logged as an HTTP call. Without an upgrade, or with the WebSocket mode off: 426 `upgrade_required` (use `POST /v1/responses`). See docs/responses-websocket.md.',
  tags: ['chat'],
  responses: { 101: { description: 'Switching protocols: the WebSocket.' } },
  errors: { 426: 'No WebSocket upgrade, or the WebSocket mode is off: `upgrade_required`; use `POST /v1/responses`.' },
};

export interface ResponsesSocketDeps {
  readonly settings: ResponsesSocketSettings;
  /** The chat call's whole budget (the relay's timeoutMs): the per-response limit on the socket too. */
  readonly timeoutMs: number;
}

export function responsesSocketRoutes(deps: ResponsesSocketDeps) {
  return async (app: FastifyInstance) => {
    const sessions = new Set<ResponsesSocket>();
    // Loopback connections to the gateway itself, one per response in flight (a Unix socket's own agent).
    const loopback = new Agent({ keepAliveTimeout: 4_000, connections: null });
    let unixAgent: { path: string; agent: Agent } | null = null;
    const dispatcherFor = (socketPath: string | undefined): Dispatcher => {
      if (socketPath === undefined) return loopback;
      if (unixAgent?.path !== socketPath) unixAgent = { path: socketPath, agent: new Agent({ keepAliveTimeout: 4_000, connect: { socketPath } }) };
      return unixAgent.agent;
    };
    // Only this path's upgrades reach the plugin (which would route an upgrade of any path through
    // fastify, and leave the socket of a route that is not a WebSocket open); any other is closed, as
    // Node closes an upgrade nobody listens for.
    const upgrades = new EventEmitter();
    const onUpgrade = (request: IncomingMessage, socket: Duplex, head: Buffer) => {
      if ((request.url ?? '').split('?')[0] === '/v1/responses') upgrades.emit('upgrade', request, socket, head);
      else socket.destroy();
    };
    app.server.on('upgrade', onUpgrade);
    await app.register(websocket, {
      options: { maxPayload: MAX_MESSAGE_BYTES, perMessageDeflate: false, server: upgrades as unknown as Server },
      // The shutdown: an idle socket closes at once (1001), a busy one once its response ended (the
      // relay ends it, with its error event, when the shutdown grace runs out).
      preClose(done) {
        app.server.off('upgrade', onUpgrade);
        for (const session of sessions) session.shutdown();
        done();
      },
    });
    // An upgrade refused before the route's hooks ran (401 and 402 at authentication, 429, the drain's
    // 503) has had its HTTP answer written to the upgrade's socket, which no HTTP server owns any more:
    // it is ended here, or it would stay open (and hold the gateway's shutdown).
    app.addHook('onResponse', (request, _reply, done) => {
      if ((request as FastifyRequest & { ws?: boolean }).ws !== true && /\bwebsocket\b/i.test(String(request.headers.upgrade ?? ''))) request.raw.socket?.end();
      done();
    });
    app.addHook('onClose', async () => {
      await Promise.all([loopback.close(), unixAgent?.agent.close()]);
    });
    app.route({
      method: 'GET',
      url: '/v1/responses',
      // The key is checked before the upgrade (401 as an HTTP answer); the rate limit is taken by each
      // response, as the HTTP route takes it, not by the socket.
      config: { auth: 'key', shape: 'chat', rateLimited: false, openapi: UPGRADE_DOC },
      handler: async (request, reply) => sendError(request, reply, new GatewayError('upgrade_required', 'GET /v1/responses is the Responses WebSocket: send a WebSocket upgrade, or POST /v1/responses.', { upgrade: 'websocket' })),
      // Runs before the upgrade: a socket the gateway will not serve is an HTTP answer the client falls back on.
      preHandler: async (request, reply) => {
        if (!deps.settings.enabled && (request as FastifyRequest & { ws?: boolean }).ws)
          return sendError(request, reply, new GatewayError('upgrade_required', 'The Responses WebSocket mode is off on this gateway; use POST /v1/responses.'));
      },
      wsHandler: (socket, request) => {
        const session = new ResponsesSocket(socket, request, deps, dispatcherFor, () => sessions.delete(session));
        sessions.add(session);
      },
    });
  };
}

/** Where the gateway listens, as its own client reaches it. */
function loopbackOrigin(request: FastifyRequest): { origin: string; socketPath?: string } | null {
  const address = request.server.server.address();
  if (address === null) return null;
  if (typeof address === 'string') return { origin: 'http://localhost', socketPath: address };
  const info = address as AddressInfo;
  const host = info.address === '0.0.0.0' ? '127.0.0.1' : info.address === '::' ? '::1' : info.address;
  return { origin: `http://${info.family === 'IPv6' || host.includes(':') ? `[${host}]` : host}:${info.port}` };
}

/** The upgrade's headers for each response's request: its key and session headers, without the socket's own. */
export function loopbackHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || SOCKET_HEADERS.has(name) || name.startsWith('sec-websocket-')) continue;
    const text = Array.isArray(value) ? value.join(', ') : value;
    if (name === 'openai-beta') {
      // The WebSocket beta is the socket's; any other beta goes with the request.
      const rest = text.split(',').map((part) => part.trim()).filter((part) => part !== '' && !part.startsWith('responses_websockets'));
      if (rest.length > 0) out[name] = rest.join(', ');
      continue;
    }
    out[name] = text;
  }
  out['content-type'] = 'application/json';
  out.accept = 'text/event-stream';
  return out;
}

/** The refusal of a socket's message once the gateway is shutting down (Codex retries a 503). */
const shuttingDown = () => socketError(new GatewayError('gateway_shutting_down', SHUTDOWN_MESSAGE));

/** One client's socket: its queue of `response.create` messages, served one at a time. */
class ResponsesSocket {
  private readonly queue: string[] = [];
  private busy = false;
  private closing = false;
  private closed = false;
  /** Bytes handed to the socket that it has not written yet. */
  private unsent = 0;
  private drainWaiters: Array<() => void> = [];
  private idle: NodeJS.Timeout | null = null;
  private current: AbortController | null = null;
  private readonly headers: Record<string, string>;

  constructor(
    private readonly socket: WebSocket,
    private readonly request: FastifyRequest,
    private readonly deps: ResponsesSocketDeps,
    private readonly dispatcherFor: (socketPath: string | undefined) => Dispatcher,
    private readonly forget: () => void,
  ) {
    this.headers = loopbackHeaders(request.headers);
    socket.on('message', (data, isBinary) => this.received(isBinary ? null : String(data)));
    socket.on('close', () => {
      this.closed = true;
      this.clearIdle();
      // A response still running: its HTTP call sees its client go (billed on what was delivered).
      this.current?.abort();
      this.wake();
      this.forget();
    });
    socket.on('error', (error) => request.log.debug({ err: error }, 'responses websocket error'));
    this.armIdle();
  }

  /** The gateway shuts down: nothing new is served; an idle socket closes now, a busy one after its response. */
  shutdown() {
    this.closing = true;
    for (const _ of this.queue.splice(0)) this.send(shuttingDown());
    if (!this.busy) this.close(1001, 'gateway shutting down');
  }

  private received(text: string | null) {
    if (this.closed) return;
    if (text === null) return this.send(socketError(new GatewayError('invalid_request', 'binary messages are not supported; send JSON text')));
    if (this.closing) return this.send(shuttingDown());
    // One response at a time, as Codex sends them; a few more wait their turn in order.
    if (this.queue.length >= MAX_QUEUED)
      return this.send(socketError(new GatewayError('rate_limit_exceeded', `at most ${MAX_QUEUED + 1} response.create messages may be pending on one socket; wait for a response to end`)));
    this.queue.push(text);
    void this.pump();
  }

  private async pump() {
    if (this.busy) return;
    this.busy = true;
    this.clearIdle();
    try {
      for (let next = this.queue.shift(); next !== undefined && !this.closed; next = this.queue.shift()) await this.serve(next);
    } catch (error) {
      this.request.log.error({ err: error }, 'responses websocket: a response failed in the gateway');
      this.send(socketError(new GatewayError('internal_error', 'the gateway failed while serving the response')));
    } finally {
      this.busy = false;
    }
    if (this.closing) this.close(1001, 'gateway shutting down');
    else this.armIdle();
  }

  private async serve(text: string) {
    const frame = clientFrame(text);
    if (frame.kind === 'ignored') return;
    if (frame.kind === 'invalid') return this.send(socketError(new GatewayError('invalid_request', frame.message)));
    if (frame.kind === 'warmup') {
      for (const event of warmupEvents(frame.body, `resp_warmup_${crypto.randomUUID().replaceAll('-', '')}`, Math.floor(Date.now() / 1000))) this.send(event);
      return;
    }
    const target = loopbackOrigin(this.request);
    if (target === null) return this.send(shuttingDown());
    const abort = new AbortController();
    this.current = abort;
    const deadline = Date.now() + this.deps.timeoutMs + DEADLINE_GRACE_MS;
    try {
      await this.relay(target, frame.body, abort, deadline);
    } finally {
      this.current = null;
    }
  }

  /** One response: the HTTP route's stream, each event a message; always ended by a terminal event. */
  private async relay(target: { origin: string; socketPath?: string }, body: Record<string, unknown>, abort: AbortController, deadline: number) {
    let answer: Dispatcher.ResponseData;
    try {
      answer = await undiciRequest(`${target.origin}/v1/responses`, {
        method: 'POST',
        headers: this.headers,
        body: JSON.stringify(body),
        signal: abort.signal,
        dispatcher: this.dispatcherFor(target.socketPath),
        // The route keeps its own budget; these only stop a gateway that no longer answers at all.
        headersTimeout: this.deps.timeoutMs + DEADLINE_GRACE_MS,
        bodyTimeout: this.deps.timeoutMs + DEADLINE_GRACE_MS,
      });
    } catch (error) {
      if (this.closed) return;
      // The gateway stopped listening (its shutdown), or cannot be reached from itself.
      const draining = this.request.server.drain?.draining ?? false;
      if (!draining) this.request.log.error({ err: error }, 'responses websocket: the gateway could not reach its own POST /v1/responses');
      return this.send(draining ? shuttingDown() : socketError(new GatewayError('internal_error', 'the gateway could not start the response', {}, 502)));
    }
    if (answer.statusCode !== 200 || !String(answer.headers['content-type'] ?? '').startsWith('text/event-stream')) {
      // A refusal (401, 402, 429, 400, 503, ...): the HTTP route's answer as an error event.
      const text = await answer.body.text().catch(() => '');
      return this.send(errorEvent(answer.statusCode, tryJson(text), answer.headers));
    }
    let ended = false;
    let oversized = false;
    const parser = createParser({
      maxBufferSize: MAX_EVENT_CHARS,
      onError: (error) => {
        if (error.type === 'max-buffer-size-exceeded') oversized = true;
      },
      onEvent: (event) => {
        if (ended) return;
        const type = eventType(event.event, event.data);
        // The gateway's own end of a stream (its shutdown) carries the status Codex reads as a retryable 503.
        if (type === 'error' && event.data.includes('"gateway_shutting_down"')) this.send({ ...(tryJson(event.data) as object), status: 503 });
        else this.sendText(event.data);
        if (isTerminal(type)) ended = true;
      },
    });
    const decoder = new TextDecoder();
    try {
      for await (const chunk of answer.body) {
        parser.feed(decoder.decode(chunk as Buffer, { stream: true }));
        if (oversized) break;
        // Back-pressure: the stream's next chunk is read once the socket took this one's messages
        // (the gateway's own stream then waits, and with it the upstream).
        await this.drained(deadline, answer.body);
        if (this.closed) break;
      }
      parser.feed(decoder.decode());
      parser.reset({ consume: true });
    } catch {
      // The stream broke off (the client went, or the route cut it): said below if the socket is open.
    } finally {
      if (!answer.body.destroyed) answer.body.destroy();
    }
    // The route ended the stream (its deadline) while the client was not taking what it was sent:
    // nothing more can reach a client that does not read, so its socket goes (as an HTTP stream's
    // connection does, src/http/protocols/client-stream.ts).
    if (!ended && !this.closed && this.unsent >= HIGH_WATER) {
      this.request.log.warn('responses websocket: the client did not read the response within its budget; the socket is cut');
      return this.socket.terminate();
    }
    // Never a silent stall: a stream that ended without its terminal event ends as an error.
    if (!ended && !this.closed)
      this.send(
        this.request.server.drain?.draining
          ? shuttingDown()
          : errorEvent(502, upstreamErrorBody('chat', 502, 'the response stream ended before its terminal event')),
      );
  }

  private send(event: Record<string, unknown>) {
    this.sendText(JSON.stringify(event));
  }

  private sendText(text: string) {
    if (this.closed || this.socket.readyState !== this.socket.OPEN) return;
    const bytes = Buffer.byteLength(text);
    this.unsent += bytes;
    this.socket.send(text, () => {
      this.unsent -= bytes;
      if (this.unsent < HIGH_WATER) this.wake();
    });
  }

  /** Resolves once the socket holds less than HIGH_WATER unsent, the socket closed, or the route ended
   * the stream (at its deadline it closes the connection of a client that does not read); past the
   * response's own deadline a client that does not read is cut (billed on what its socket took). */
  private async drained(deadline: number, stream: NodeJS.EventEmitter): Promise<void> {
    if (this.unsent < HIGH_WATER || this.closed) return;
    let timer: NodeJS.Timeout | undefined;
    let onEnd: (() => void) | undefined;
    await new Promise<void>((resolve) => {
      this.drainWaiters.push(resolve);
      onEnd = resolve;
      stream.once('close', onEnd);
      timer = setTimeout(() => {
        this.request.log.warn('responses websocket: the client did not read within the response budget; the socket is cut');
        this.socket.terminate();
        resolve();
      }, Math.max(0, deadline - Date.now()));
    });
    clearTimeout(timer);
    stream.off('close', onEnd!);
  }

  private wake() {
    for (const resolve of this.drainWaiters.splice(0)) resolve();
  }

  private armIdle() {
    this.clearIdle();
    if (this.closed) return;
    this.idle = setTimeout(() => this.close(1000, 'idle timeout'), this.deps.settings.idleMs);
    this.idle.unref();
  }

  private clearIdle() {
    if (this.idle) clearTimeout(this.idle);
    this.idle = null;
  }

  private close(code: number, reason: string) {
    if (this.closed) return;
    this.clearIdle();
    this.socket.close(code, reason);
  }
}
