import Anthropic, { APIError as AnthropicError } from '@anthropic-ai/sdk';
import { ApiError, GoogleGenAI } from '@google/genai';
import OpenAI, { APIError } from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { tokensFromChars } from '../../src/upstream/pricing';
import { chatConfig } from '../chat/support';
import { imagesConfig } from '../media/support';
import { startSimulatedGateway, type SimulatedGateway } from '../support/gateway';

// Issue 18, item 4: a graceful shutdown. The gateway stops taking requests and says so on
// /readyz at once; calls in flight finish within SHUTDOWN_GRACE_S; past it, streams are ended
// with their protocol's error frame and billed on what was delivered, other calls are released;
// the queued settlements are appended and the projections catch up before storage closes.

let h: SimulatedGateway | null = null;
afterEach(async () => {
  await h?.close();
  h = null;
});

async function start(shutdownGraceS: number) {
  h = await startSimulatedGateway(chatConfig, { shutdownGraceS });
  const account = await h.t.accountWithKey();
  return { h, ...account };
}

/** The call-log rows and the account's last held amount, as the projections have them: read
 * without catching up (the shutdown must have flushed them). */
async function recorded(g: SimulatedGateway, accountId: string) {
  const rows = await g.t.db.sql.query<{ endpoint: string; status: string; error_code: string | null; output_tokens: string; cost: string; attempts_count: number }>(
    'SELECT endpoint, status, error_code, output_tokens::text AS output_tokens, cost::text AS cost, attempts_count FROM call_log WHERE account_id = $1 ORDER BY endpoint',
    [accountId],
  );
  const [last] = await g.t.db.sql.query<{ held_after: string }>('SELECT held_after::text AS held_after FROM ledger_entries WHERE account_id = $1 ORDER BY seq DESC LIMIT 1', [
    accountId,
  ]);
  return { rows, held: last?.held_after };
}

/** Resolves once `condition` holds (polled). */
async function until(condition: () => boolean) {
  while (!condition()) await new Promise((r) => setTimeout(r, 10));
}

describe('graceful shutdown', () => {
  it('lets a stream in flight finish within the grace, is not ready meanwhile, and leaves nothing open', async () => {
    const { h, accountId, key } = await start(30);
    const openai = new OpenAI({ apiKey: key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
    const stream = await openai.chat.completions.create({
      model: 'chat-model',
      messages: [{ role: 'user', content: 'one two three four five [[sim:slow_stream:150]]' }],
      stream: true,
    });
    let text = '';
    let chunks = 0;
    let closing: Promise<void> | null = null;
    let duringDrain: unknown = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      chunks += 1;
      if (chunks === 1) {
        closing = h.t.gateway.close();
        // Not ready from the start of the shutdown; new connections are not accepted any more.
        duringDrain = await h.t.gateway.readiness.verdict();
        await expect.poll(() => fetch(`${h.baseUrl}/healthz`).then(() => 'accepted', () => 'refused')).toBe('refused');
      }
    }
    expect(text).toBe('Echo: one two three four five');
    expect(duringDrain).toEqual({
      ready: false,
      report: { status: 'shutting_down', failing: ['shutdown'], checks: { shutdown: { status: 'failing', error: 'the gateway is shutting down' } } },
    });
    await closing;
    const { rows, held } = await recorded(h, accountId);
    expect(rows).toMatchObject([{ status: 'success', error_code: null }]);
    expect(held).toBe('0');
  });

  it('past the grace, ends each protocol stream with its error frame, bills what was delivered, and leaves no hold open', async () => {
    const { h, accountId, key } = await start(0.5);
    const long = '[[sim:slow_stream:100,reply_tokens:2000]]';
    const openai = new OpenAI({ apiKey: key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
    const anthropic = new Anthropic({ apiKey: key, baseURL: h.baseUrl, maxRetries: 0 });
    const genai = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: h.baseUrl } });
    const received = { chat: '', messages: '', responses: '', generate: '', array: '' };
    let arrayStarted = false;
    const ends: Record<keyof typeof received, unknown> = { chat: null, messages: null, responses: null, generate: null, array: null };
    const calls = [
      (async () => {
        const stream = await openai.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: `chat ${long}` }], stream: true });
        try {
          for await (const chunk of stream) received.chat += chunk.choices[0]?.delta.content ?? '';
          ends.chat = 'finished';
        } catch (error) {
          ends.chat = { status: (error as APIError).status, code: (error as APIError).code, type: (error as APIError).type };
        }
      })(),
      (async () => {
        const stream = anthropic.messages.stream({ model: 'msg-model', max_tokens: 4000, messages: [{ role: 'user', content: `messages ${long}` }] });
        try {
          for await (const event of stream) if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') received.messages += event.delta.text;
          ends.messages = 'finished';
        } catch (error) {
          ends.messages = { type: ((error as AnthropicError).error as { error?: { type?: string } }).error?.type };
        }
      })(),
      (async () => {
        const stream = await openai.responses.create({ model: 'resp-model', input: `responses ${long}`, stream: true });
        for await (const event of stream) {
          if (event.type === 'response.output_text.delta') received.responses += event.delta;
          if (event.type === 'error') ends.responses = { type: event.type, code: event.code };
        }
      })(),
      (async () => {
        const stream = await genai.models.generateContentStream({ model: 'gem-model', contents: `generate ${long}` });
        try {
          for await (const chunk of stream) received.generate += chunk.text ?? '';
          ends.generate = 'finished';
        } catch (error) {
          ends.generate = { status: error instanceof ApiError ? error.status : String(error) };
        }
      })(),
      (async () => {
        // generate-content without ?alt=sse: one JSON array, written element by element.
        const response = await fetch(`${h.baseUrl}/v1beta/models/gem-model:streamGenerateContent`, {
          method: 'POST',
          headers: { 'x-goog-api-key': key, 'content-type': 'application/json' },
          body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: `array ${long}` }] }] }),
        });
        let text = '';
        const decoder = new TextDecoder();
        for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
          text += decoder.decode(chunk, { stream: true });
          arrayStarted = true;
        }
        const elements = JSON.parse(text) as Array<{ candidates?: Array<{ content: { parts: Array<{ text?: string }> } }>; error?: unknown }>;
        received.array = elements.map((e) => e.candidates?.[0]?.content.parts.map((p) => p.text ?? '').join('') ?? '').join('');
        ends.array = elements.at(-1)?.error ?? 'finished';
      })(),
    ];
    // Every stream has delivered some of its text, then the shutdown begins.
    await until(() => arrayStarted && [received.chat, received.messages, received.responses, received.generate].every((text) => text.length > 0));
    await h.t.gateway.close();
    await Promise.all(calls);

    expect(ends).toEqual({
      chat: { status: undefined, code: 'gateway_shutting_down', type: 'server_error' },
      messages: { type: 'overloaded_error' },
      responses: { type: 'error', code: 'gateway_shutting_down' },
      generate: { status: 503 },
      array: { code: 503, message: 'the gateway is shutting down; retry the request', status: 'UNAVAILABLE' },
    });
    const { rows, held } = await recorded(h, accountId);
    expect(held).toBe('0');
    expect(rows.map((r) => [r.endpoint, r.status, r.error_code])).toEqual([
      ['chat-completions', 'interrupted', 'gateway_shutting_down'],
      ['generate-content', 'interrupted', 'gateway_shutting_down'],
      ['generate-content', 'interrupted', 'gateway_shutting_down'],
      ['messages', 'interrupted', 'gateway_shutting_down'],
      ['responses', 'interrupted', 'gateway_shutting_down'],
    ]);
    // Billed on the output the client received (no usage report came: the estimate of the prompt
    // and the characters delivered), a part of the 2000 tokens the whole answer would have had.
    const output = (endpoint: string) => rows.filter((r) => r.endpoint === endpoint).map((r) => Number(r.output_tokens));
    expect(output('chat-completions')).toEqual([tokensFromChars(received.chat.length)]);
    expect(output('messages')).toEqual([tokensFromChars(received.messages.length)]);
    expect(output('responses')).toEqual([tokensFromChars(received.responses.length)]);
    expect(output('generate-content').sort()).toEqual([tokensFromChars(received.generate.length), tokensFromChars(received.array.length)].sort());
    for (const row of rows) {
      expect(Number(row.output_tokens)).toBeGreaterThan(0);
      expect(Number(row.output_tokens)).toBeLessThan(2000);
      expect(BigInt(row.cost)).toBeGreaterThan(0n);
    }
  });

  it('past the grace, a call still waiting for its upstream is answered 503 and its hold released', async () => {
    const { h, accountId, key } = await start(0.2);
    const response = fetch(`${h.baseUrl}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'msg-model', max_tokens: 100, messages: [{ role: 'user', content: 'slow [[sim:hang]]' }] }),
    });
    await until(() => h.sim.requests.length === 1);
    const closing = h.t.gateway.close();
    const answer = await response;
    expect(answer.status).toBe(503);
    expect(await answer.json()).toEqual({ type: 'error', error: { type: 'overloaded_error', message: 'the gateway is shutting down; retry the request' } });
    await closing;
    const { rows, held } = await recorded(h, accountId);
    // One attempt: the other channel is not tried once the call was ended.
    expect(rows).toEqual([{ endpoint: 'messages', status: 'error', error_code: 'gateway_shutting_down', output_tokens: '0', cost: '0', attempts_count: 1 }]);
    expect(held).toBe('0');
  });

  it('past the grace, an image call kept alive is answered with its error body and its hold released', async () => {
    h = await startSimulatedGateway(imagesConfig, { shutdownGraceS: 0.2, imageTimings: { keepAliveAfterMs: 100, keepAliveEveryMs: 50 } });
    const g = h;
    const { accountId, key } = await g.t.accountWithKey();
    g.sim.enqueue('hang');
    const response = await fetch(`${g.baseUrl}/v1/images/generations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'img-model', prompt: 'a lighthouse' }),
    });
    // Past the keep-alive point the 200 is out: the failure comes as the body.
    expect(response.status).toBe(200);
    const closing = g.t.gateway.close();
    expect(JSON.parse(await response.text())).toEqual({
      error: { message: 'the gateway is shutting down; retry the request', type: 'server_error', code: 'gateway_shutting_down' },
    });
    await closing;
    const { rows, held } = await recorded(g, accountId);
    // One attempt: the other channel is not tried once the call was ended.
    expect(rows).toMatchObject([{ endpoint: 'images.generations', status: 'error', error_code: 'gateway_shutting_down', cost: '0', attempts_count: 1 }]);
    expect(held).toBe('0');
  });

  it('a second close ends the grace at once', async () => {
    const { h, accountId, key } = await start(600);
    const openai = new OpenAI({ apiKey: key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
    const stream = await openai.chat.completions.create({
      model: 'chat-model',
      messages: [{ role: 'user', content: 'hurry [[sim:slow_stream:100,reply_tokens:2000]]' }],
      stream: true,
    });
    let end: unknown = null;
    let closing: Promise<void> | null = null;
    try {
      for await (const chunk of stream) {
        if (closing === null && chunk.choices[0]?.delta.content) {
          closing = h.t.gateway.close();
          void h.t.gateway.close();
        }
      }
    } catch (error) {
      end = (error as APIError).code;
    }
    await closing;
    expect(end).toBe('gateway_shutting_down');
    const { rows, held } = await recorded(h, accountId);
    expect(rows).toMatchObject([{ status: 'interrupted', error_code: 'gateway_shutting_down' }]);
    expect(held).toBe('0');
  });
});
