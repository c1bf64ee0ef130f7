import { readFileSync } from 'node:fs';
import WebSocket from 'ws';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { CallRecord } from '../../src/events/catalog';
import type { GatewayConfig } from '../../src/config/schema';
import type { Simulator } from '../../src/simulator';
import { outputTokens, promptTokens } from '../../src/simulator';
import { startSimulatedGateway, type SimulatedGateway } from '../support/gateway';
import { chatConfig, expectedCost } from './support';

// Codex's Responses WebSocket mode on GET /v1/responses (issue 36 item 1, docs/responses-websocket.md),
// driven with the `ws` package as Codex drives it, against the simulator; billing compared with the
// HTTP streaming route's for the same request.

/** chatConfig, plus a model served only by a chat-completions channel that translates for Responses clients. */
function config(sim: Simulator): GatewayConfig {
  const base = chatConfig(sim);
  const resp = base.models.find((m) => m.id === 'resp-model')!;
  return {
    ...base,
    models: [...base.models, { ...resp, id: 'xlat-model', aliases: [] }],
    channels: [
      ...base.channels,
      { id: 'cc-x', protocol: 'chat-completions', base_url: `${sim.url}/cc-x`, api_key: 'key-cc-x', group: 'default', priority: 0, weight: 1, models: { 'xlat-model': 'xlat-upstream' }, tools: [], translation: true },
    ],
  } as GatewayConfig;
}

const BETA = { 'OpenAI-Beta': 'responses_websockets=2026-02-06' };
type Event = Record<string, unknown> & { type: string };

/** A client socket: its messages in order, and the events of one response up to its terminal event. */
class CodexSocket {
  readonly events: Event[] = [];
  private waiters: Array<() => void> = [];
  closed: { code: number; reason: string } | null = null;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      this.events.push(JSON.parse(String(data)) as Event);
      this.wake();
    });
    ws.on('close', (code, reason) => {
      this.closed = { code, reason: String(reason) };
      this.wake();
    });
  }

  static open(url: string, headers: Record<string, string>): Promise<CodexSocket> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, { headers });
      ws.once('open', () => resolve(new CodexSocket(ws)));
      ws.once('unexpected-response', (req, res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += String(chunk)));
        // Resolves once the gateway ends the connection (a refused upgrade must not stay open).
        const serverEnded = new Promise<void>((done) => (res.socket.readableEnded ? done() : res.socket.once('end', () => done())));
        res.on('end', () => {
          reject(Object.assign(new Error(`upgrade refused: ${res.statusCode}`), { status: res.statusCode, body, headers: res.headers, serverEnded }));
          void serverEnded.then(() => req.destroy());
        });
      });
      ws.once('error', reject);
    });
  }

  send(frame: unknown) {
    this.ws.send(JSON.stringify(frame));
  }

  /** The events from `from` up to and including the next terminal event. */
  async response(from: number): Promise<Event[]> {
    const terminal = (e: Event) => ['response.completed', 'response.failed', 'response.incomplete', 'error'].includes(e.type);
    for (;;) {
      const at = this.events.slice(from).findIndex(terminal);
      if (at >= 0) return this.events.slice(from, from + at + 1);
      if (this.closed) throw new Error(`socket closed (${this.closed.code}) before a terminal event`);
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  async create(body: Record<string, unknown>): Promise<Event[]> {
    const from = this.events.length;
    this.send({ type: 'response.create', ...body });
    return this.response(from);
  }

  close() {
    this.ws.close();
  }

  private wake() {
    for (const wake of this.waiters.splice(0)) wake();
  }
}

const responseOf = (events: Event[]) => (events.at(-1) as unknown as { response: { id: string; output: Array<{ type: string; name?: string; arguments?: string; call_id?: string }>; usage: Record<string, number>; previous_response_id: string | null } }).response;
const deltaText = (events: Event[]) => events.flatMap((e) => (e.type === 'response.output_text.delta' ? [e.delta as string] : [])).join('');

function suite(mode: string) {
  describe(`Responses over WebSocket (${mode})`, () => {
    let h: SimulatedGateway;
    let wsUrl: string;
    beforeAll(async () => {
      h = await startSimulatedGateway(config, { chatTimeoutMs: 5000, env: { RESPONSES_WEBSOCKET_IDLE_S: '2' } });
      wsUrl = `${h.baseUrl.replace('http', 'ws')}/v1/responses`;
    });
    afterAll(() => h.close());
    beforeEach(() => h.sim.reset());

    const account = async () => {
      const { accountId, key } = await h.t.accountWithKey();
      return { accountId, key, auth: { authorization: `Bearer ${key}` } };
    };
    const wallet = (accountId: string) => h.t.gateway.ledger.wallet(accountId);
    /** The settlements (receipts) of an account's calls, once no hold is open. */
    const settlements = async (accountId: string) => {
      await expect.poll(async () => (await wallet(accountId)).held).toBe(0n);
      await h.t.gateway.ledger.idle();
      const events = await h.t.gateway.storage.store.readStream(`wallet-${accountId}`);
      return events.filter((e) => e.type === 'HoldSettled').map((e) => e.data as { captured: string; call: CallRecord });
    };
    /** The account's call-log rows (the projection), oldest first. */
    const rows = async (accountId: string, count: number) => {
      await h.t.gateway.runner.catchUpToHead();
      let data: Array<Record<string, unknown>> = [];
      await expect
        .poll(async () => {
          data = ((await h.t.admin('GET', `/accounts/${accountId}/logs`)).json() as { data: Array<Record<string, unknown>> }).data;
          return data.length;
        })
        .toBe(count);
      return data.reverse();
    };

    it('replays a recorded Codex session: warm-up, a text turn and a tool-call turn, each billed and logged once', async () => {
      const fixture = JSON.parse(readFileSync(new URL('../compat/fixtures/codex-ws/session.json', import.meta.url), 'utf8')) as {
        upgrade_headers: Record<string, string>;
        frames: Array<{ send: Record<string, unknown>; expect?: { terminal: string; output_types: string[]; billed: boolean } }>;
      };
      const { accountId, auth } = await account();
      const socket = await CodexSocket.open(wsUrl, { ...fixture.upgrade_headers, ...auth });
      let last = '';
      let billed = 0;
      for (const frame of fixture.frames) {
        const send = { ...frame.send, ...(frame.send.model ? { model: 'resp-model' } : {}), ...(frame.send.response_id === '$last' ? { response_id: last } : {}) };
        if (!frame.expect) {
          socket.send(send);
          continue;
        }
        const from = socket.events.length;
        socket.send(send);
        const events = await socket.response(from);
        expect(events.at(-1)!.type).toBe(frame.expect.terminal);
        const response = responseOf(events);
        expect(response.output.map((item) => item.type)).toEqual(frame.expect.output_types);
        last = response.id;
        if (frame.expect.billed) billed++;
      }
      // The tool call of the last turn, as Codex reads it.
      const call = responseOf(socket.events).output.find((item) => item.type === 'function_call')!;
      expect(call).toMatchObject({ name: 'shell' });
      expect(JSON.parse(call.arguments!)).toEqual({ command: ['ls', '-la'] });
      // Only the turns that generated went upstream; the socket's beta header did not.
      expect(h.sim.requests).toHaveLength(billed);
      for (const forwarded of h.sim.requests) expect(forwarded.headers['openai-beta']).toBeUndefined();
      expect(h.sim.requests.map((r) => r.body)).toEqual([
        expect.objectContaining({ stream: true, store: false, prompt_cache_key: '0198f1c2-codex-ws-fixture' }),
        expect.objectContaining({ stream: true, tools: [expect.objectContaining({ name: 'shell' })] }),
      ]);
      expect(h.sim.requests.every((r) => !('generate' in (r.body as object)) && !('type' in (r.body as object)))).toBe(true);
      const settled = await settlements(accountId);
      expect(settled.map((s) => s.call.status)).toEqual(['success', 'success']);
      const logged = await rows(accountId, 2);
      expect(logged.map((r) => [r.status, r.model])).toEqual([
        ['success', 'resp-model'],
        ['success', 'resp-model'],
      ]);
      expect(logged.map((r) => r.request_id).sort()).toEqual(settled.map((s) => s.call.request_id).sort());
      socket.close();
    });

    it('bills a response on the socket exactly as the same request streamed over HTTP', async () => {
      const input = [{ role: 'user', content: 'same request both ways' }];
      const body = { model: 'resp-model', instructions: 'Be brief', input };
      const ws = await account();
      const socket = await CodexSocket.open(wsUrl, { ...BETA, ...ws.auth });
      const events = await socket.create(body);
      socket.close();
      expect(events.map((e) => e.type)).toContain('response.output_text.delta');
      expect(events.at(-1)!.type).toBe('response.completed');
      expect(deltaText(events)).toBe('Echo: same request both ways');
      // Sequence numbers as the SSE stream numbers them.
      expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));

      const http = await account();
      const res = await fetch(`${h.baseUrl}/v1/responses`, { method: 'POST', headers: { ...http.auth, 'content-type': 'application/json' }, body: JSON.stringify({ ...body, stream: true }) });
      const sse = await res.text();
      const httpTypes = [...sse.matchAll(/^event: (.+)$/gm)].map((m) => m[1]);
      expect(events.map((e) => e.type)).toEqual(httpTypes);

      const prompt = promptTokens('responses', { instructions: 'Be brief', input });
      const cost = expectedCost(prompt, 0, outputTokens('Echo: same request both ways'));
      const [overSocket] = await settlements(ws.accountId);
      const [overHttp] = await settlements(http.accountId);
      expect(BigInt(overSocket!.captured)).toBe(cost);
      expect(overSocket!.captured).toBe(overHttp!.captured);
      const pick = (c: CallRecord) => ({ status: c.status, endpoint: c.endpoint, model: c.model, input_tokens: c.input_tokens, output_tokens: c.output_tokens, cached_tokens: c.cached_tokens, channel_id: c.channel_id });
      expect(pick(overSocket!.call)).toEqual(pick(overHttp!.call));
      const [row] = await rows(ws.accountId, 1);
      const [httpRow] = await rows(http.accountId, 1);
      expect(row).toMatchObject({ status: 'success', model: 'resp-model', cost_usd: httpRow!.cost_usd, input_tokens: prompt, output_tokens: httpRow!.output_tokens });
      expect(Number(row!.cost_usd)).toBeGreaterThan(0);
    });

    it('serves two responses one after another on one socket (and queues one sent before the first ended), without the beta header', async () => {
      const { accountId, auth } = await account();
      const socket = await CodexSocket.open(wsUrl, auth);
      const from = socket.events.length;
      socket.send({ type: 'response.create', model: 'resp-model', input: 'first turn' });
      socket.send({ type: 'response.create', model: 'resp-model', input: 'second turn' });
      const first = await socket.response(from);
      const second = await socket.response(from + first.length);
      expect(deltaText(first)).toBe('Echo: first turn');
      expect(deltaText(second)).toBe('Echo: second turn');
      expect(second.at(-1)!.type).toBe('response.completed');
      const third = await socket.create({ model: 'resp-model', input: 'third turn' });
      expect(deltaText(third)).toBe('Echo: third turn');
      socket.close();
      const settled = await settlements(accountId);
      expect(settled).toHaveLength(3);
      const logged = await rows(accountId, 3);
      expect(logged.map((r) => r.request_id).sort()).toEqual(settled.map((s) => s.call.request_id).sort());
      expect(new Set(logged.map((r) => r.request_id)).size).toBe(3);
    });

    it('continues a stored response with previous_response_id on a native channel', async () => {
      const { auth } = await account();
      const socket = await CodexSocket.open(wsUrl, { ...BETA, ...auth });
      const first = responseOf(await socket.create({ model: 'resp-model', input: 'remember me', store: true }));
      const next = await socket.create({ model: 'resp-model', previous_response_id: first.id, input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'and now?' }] }] });
      socket.close();
      expect(next.at(-1)!.type).toBe('response.completed');
      expect(responseOf(next).previous_response_id).toBe(first.id);
      expect(h.sim.requests.at(-1)!.body).toMatchObject({ previous_response_id: first.id });
    });

    it('refuses previous_response_id on a translated channel with a clear error event, unbilled, and keeps the socket open', async () => {
      const { accountId, auth } = await account();
      const socket = await CodexSocket.open(wsUrl, { ...BETA, ...auth });
      const refused = await socket.create({ model: 'xlat-model', previous_response_id: 'resp_elsewhere', input: 'go on' });
      expect(refused).toHaveLength(1);
      expect(refused[0]).toMatchObject({ type: 'error', status: 400, error: { type: 'invalid_request_error', code: 'invalid_request' } });
      expect((refused[0]!.error as { message: string }).message).toMatch(/previous_response_id/);
      expect(h.sim.requests).toHaveLength(0);
      // The HTTP route refuses it the same way (it used to drop the field and answer without the conversation).
      const http = await fetch(`${h.baseUrl}/v1/responses`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'xlat-model', previous_response_id: 'resp_elsewhere', input: 'go on' }) });
      expect(http.status).toBe(400);
      expect(await http.json()).toMatchObject({ error: { code: 'invalid_request', message: (refused[0]!.error as { message: string }).message } });
      // The same model without it is served through the translation.
      const served = await socket.create({ model: 'xlat-model', input: 'translated turn' });
      expect(served.at(-1)!.type).toBe('response.completed');
      expect(deltaText(served)).toBe('Echo: translated turn');
      expect(h.sim.requests.at(-1)!.path).toBe('/cc-x/v1/chat/completions');
      socket.close();
      const logged = await rows(accountId, 3);
      const byStatus = Object.fromEntries(logged.map((r) => [r.status, r]));
      expect(Object.keys(byStatus).sort()).toEqual(['rejected', 'success']);
      expect(byStatus.rejected).toMatchObject({ model: 'xlat-model', error_code: 'invalid_request' });
      expect(Number(byStatus.rejected!.cost_usd)).toBe(0);
      expect(Number(byStatus.success!.cost_usd)).toBeGreaterThan(0);
    });

    it('answers errors of a response as error events in the HTTP route\'s status and code, and a bad message without closing', async () => {
      const { auth } = await account();
      const socket = await CodexSocket.open(wsUrl, auth);
      const unknown = await socket.create({ model: 'no-such-model', input: 'x' });
      expect(unknown[0]).toMatchObject({ type: 'error', status: 400, error: { code: 'model_not_found' } });
      const from = socket.events.length;
      socket.ws.send('not json');
      const bad = await socket.response(from);
      expect(bad[0]).toMatchObject({ type: 'error', status: 400, error: { code: 'invalid_request' } });
      h.sim.enqueue('http_500', 'http_500', 'http_500');
      const failed = await socket.create({ model: 'resp-model', input: 'all channels fail' });
      expect(failed.at(-1)).toMatchObject({ type: 'error' });
      expect((failed.at(-1) as unknown as { status: number }).status).toBeGreaterThanOrEqual(500);
      expect(socket.closed).toBeNull();
      socket.close();
    });

    it('ends a response whose upstream stream broke off with an error event, never a stall', async () => {
      const { auth } = await account();
      const socket = await CodexSocket.open(wsUrl, auth);
      const cut = await socket.create({ model: 'resp-model', input: 'one two three four five six [[sim:cut_stream_after:3]]' });
      expect(cut.at(-1)).toMatchObject({ type: 'error', status: 502, error: { code: 'upstream_error' } });
      // The socket serves the next response.
      expect((await socket.create({ model: 'resp-model', input: 'after the cut' })).at(-1)!.type).toBe('response.completed');
      socket.close();
    });

    it('bills a response the client left mid-stream on what was delivered, as an HTTP stream it disconnected from', async () => {
      const { accountId, auth } = await account();
      const socket = await CodexSocket.open(wsUrl, auth);
      const words = Array.from({ length: 30 }, (_, i) => `w${i}`).join(' ');
      socket.send({ type: 'response.create', model: 'resp-model', input: `${words} [[sim:slow_stream:50]]` });
      await expect.poll(() => socket.events.some((e) => e.type === 'response.output_text.delta')).toBe(true);
      socket.ws.terminate();
      const [settled] = await settlements(accountId);
      expect(settled!.call).toMatchObject({ status: 'interrupted', error_code: 'client_disconnected' });
      expect(settled!.call.output_tokens).toBeLessThan(outputTokens(`Echo: ${words}`));
    });

    it('holds the upstream back while the client does not read, cuts it at the response budget and bills it interrupted, not in full', { timeout: 30_000 }, async () => {
      const { accountId, auth } = await account();
      const socket = await CodexSocket.open(wsUrl, auth);
      const large = 100_000;
      socket.send({ type: 'response.create', model: 'resp-model', max_output_tokens: large, input: `never read [[sim:reply_tokens:${large}]]` });
      const raw = (socket.ws as unknown as { _socket: import('node:net').Socket })._socket;
      raw.pause();
      // The chat budget here is 5 s: the gateway gives up on the client then, not before.
      const settledEvents = async () => (await h.t.gateway.storage.store.readStream(`wallet-${accountId}`)).filter((e) => e.type === 'HoldSettled').length;
      await expect.poll(settledEvents, { timeout: 20_000, interval: 250 }).toBe(1);
      const [settled] = await settlements(accountId);
      // The gateway cut the socket: the client sees it once it reads again.
      raw.resume();
      await expect.poll(() => socket.closed, { timeout: 10_000 }).not.toBeNull();
      expect(settled!.call).toMatchObject({ status: 'interrupted', error_code: 'client_timeout' });
      expect(settled!.call.output_tokens).toBeGreaterThan(0);
      // Not the whole answer: the upstream was held back. What is billed is what the HTTP leg's socket took,
      // which counts the loopback's and this socket's buffers (several MB on loopback) as delivered.
      expect(settled!.call.output_tokens).toBeLessThan(large);
    });

    it('refuses a bad key at the upgrade with 401 and the JSON error, with and without the beta header', async () => {
      for (const headers of [{ ...BETA, authorization: 'Bearer sk-not-a-key' }, { authorization: 'Bearer sk-not-a-key' }, {}] as Array<Record<string, string>>) {
        const refused = (await CodexSocket.open(wsUrl, headers).catch((e: unknown) => e)) as { status: number; body: string; serverEnded: Promise<void> };
        expect(refused.status).toBe(401);
        await refused.serverEnded;
        expect(JSON.parse(refused.body)).toMatchObject({ error: { code: 'invalid_api_key', type: 'authentication_error' } });
      }
    });

    it('answers a GET without an upgrade 426 upgrade_required, so the client falls back to POST', async () => {
      const { auth } = await account();
      const res = await fetch(`${h.baseUrl}/v1/responses`, { headers: auth });
      expect(res.status).toBe(426);
      expect(await res.json()).toMatchObject({ error: { code: 'upgrade_required' } });
      // An upgrade of any other path is closed at once, as before the WebSocket existed.
      const other = (await CodexSocket.open(`${h.baseUrl.replace('http', 'ws')}/v1/models`, auth).catch((e: unknown) => e)) as Error;
      expect(other.message).toMatch(/socket hang up|ECONNRESET/);
    });

    it('closes a socket idle for RESPONSES_WEBSOCKET_IDLE_S with 1000', async () => {
      const { auth } = await account();
      const socket = await CodexSocket.open(wsUrl, auth);
      expect((await socket.create({ model: 'resp-model', input: 'then nothing' })).at(-1)!.type).toBe('response.completed');
      await expect.poll(() => socket.closed, { timeout: 5000 }).toEqual({ code: 1000, reason: 'idle timeout' });
    });

    it('closes its sockets with 1001 when the gateway shuts down', async () => {
      const own = await startSimulatedGateway(config, { chatTimeoutMs: 5000 });
      try {
        const { key } = await own.t.accountWithKey();
        const socket = await CodexSocket.open(`${own.baseUrl.replace('http', 'ws')}/v1/responses`, { authorization: `Bearer ${key}` });
        expect((await socket.create({ model: 'resp-model', input: 'before shutdown' })).at(-1)!.type).toBe('response.completed');
        await own.t.gateway.close();
        await expect.poll(() => socket.closed?.code).toBe(1001);
      } finally {
        await own.sim.close();
        await own.t.db.drop();
      }
    });
  });

  describe(`Responses WebSocket turned off (${mode})`, () => {
    let h: SimulatedGateway;
    beforeAll(async () => {
      h = await startSimulatedGateway(config, { env: { RESPONSES_WEBSOCKET: 'off' } });
    });
    afterAll(() => h.close());

    it('answers the upgrade 426 at once, and POST /v1/responses still serves', async () => {
      const { key } = await h.t.accountWithKey();
      const refused = (await CodexSocket.open(`${h.baseUrl.replace('http', 'ws')}/v1/responses`, { ...BETA, authorization: `Bearer ${key}` }).catch((e: unknown) => e)) as { status: number; body: string; serverEnded: Promise<void> };
      expect(refused.status).toBe(426);
      await refused.serverEnded;
      expect(JSON.parse(refused.body)).toMatchObject({ error: { code: 'upgrade_required' } });
      const res = await fetch(`${h.baseUrl}/v1/responses`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'resp-model', input: 'over http' }) });
      expect(res.status).toBe(200);
    });
  });
}

suite(process.env.DATABASE_URL ? 'Postgres' : 'embedded');
