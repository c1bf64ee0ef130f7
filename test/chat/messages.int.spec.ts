import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/money/usd';
import { cachedTokensFor, countTokens, outputTokens, promptTokens } from '../../src/simulator';
import { expectedCost, startChatHarness, type ChatHarness } from './support';

let h: ChatHarness;
beforeAll(async () => {
  h = await startChatHarness({ chatTimeoutMs: 3000 });
});
afterAll(() => h.close());
beforeEach(() => h.sim.reset());

const START = parseUsd('40.44');

async function client(keyFields: Record<string, unknown> = {}) {
  const { accountId, key, keyId } = await h.t.accountWithKey(keyFields);
  return { accountId, keyId, key, anthropic: new Anthropic({ apiKey: key, baseURL: h.baseUrl, maxRetries: 0 }) };
}

const wallet = (accountId: string) => h.t.gateway.ledger.wallet(accountId);
const balance = async (accountId: string) => (await wallet(accountId)).balance;

interface SettledCall {
  captured: string;
  call: { status: string; input_tokens: number; output_tokens: number; cached_tokens: number; error_code: string | null; attempts_count: number; channel_id: string | null; endpoint: string };
}

async function settledCalls(accountId: string): Promise<SettledCall[]> {
  // Settlements are queued when the answer leaves and appended right after it.
  await h.t.gateway.ledger.idle();
  const events = await h.t.gateway.storage.store.readStream(`wallet-${accountId}`);
  return events.filter((e) => e.type === 'HoldSettled').map((e) => e.data as SettledCall);
}

/** Waits for a stream's settlement (it happens after the last byte was written). */
async function lastSettled(accountId: string, count = 1): Promise<SettledCall> {
  await expect.poll(async () => (await settledCalls(accountId)).length).toBe(count);
  await expect.poll(async () => (await wallet(accountId)).held).toBe(0n);
  return (await settledCalls(accountId)).at(-1)!;
}

function post(body: unknown, headers: Record<string, string>) {
  return fetch(`${h.baseUrl}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

const tokens = (text: string) => countTokens(text);

describe('POST /v1/messages with @anthropic-ai/sdk', () => {
  it('answers non-streaming, forwards natively and bills a cache write at 1.25x, then a cache read', async () => {
    const { accountId, anthropic } = await client();
    const system = 'Be brief [cache]';
    const messages = [{ role: 'user' as const, content: 'Hello there' }];
    const first = await anthropic.messages.create({ model: 'msg-model', max_tokens: 200, system, messages });
    expect(first.type).toBe('message');
    expect(first.role).toBe('assistant');
    expect(first.content).toEqual([{ type: 'text', text: 'Echo: Hello there' }]);
    expect(first.stop_reason).toBe('end_turn');

    const prompt = promptTokens('messages', { system, messages });
    const half = cachedTokensFor(prompt);
    expect(half).toBeGreaterThan(0);
    expect(first.usage).toMatchObject({ input_tokens: prompt - half, cache_creation_input_tokens: half, cache_read_input_tokens: 0 });
    const output = tokens('Echo: Hello there');
    expect(first.usage.output_tokens).toBe(output);

    const forwarded = h.sim.requests.at(-1)!;
    expect(forwarded.path).toBe('/msg-a/v1/messages');
    expect(forwarded.model).toBe('msg-model-upstream');
    expect(forwarded.apiKey).toBe('key-msg-a');
    expect(forwarded.headers['x-api-key']).toBe('key-msg-a');
    expect(forwarded.headers.authorization).toBeUndefined();
    // The SDK's own (newer) version is passed through, not replaced by the default.
    expect(forwarded.headers['anthropic-version']).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(forwarded.headers['anthropic-version']).not.toBe('2023-06-01');
    expect(forwarded.body).toEqual({ model: 'msg-model-upstream', max_tokens: 200, system, messages });

    // The written half billed at 1.25 × the input price, the rest at the input price.
    const afterFirst = START - expectedCost(prompt, 0, output, half, 1.25);
    expect(await balance(accountId)).toBe(afterFirst);

    const second = await anthropic.messages.create({ model: 'msg-model', max_tokens: 200, system, messages });
    expect(second.usage).toMatchObject({ input_tokens: prompt - half, cache_creation_input_tokens: 0, cache_read_input_tokens: half });
    expect(await balance(accountId)).toBe(afterFirst - expectedCost(prompt, half, output));
    const w = await wallet(accountId);
    expect(w.held).toBe(0n);
    const call = (await settledCalls(accountId)).at(-1)!.call;
    expect(call).toMatchObject({ status: 'success', endpoint: 'messages', input_tokens: prompt, cached_tokens: half, output_tokens: output, channel_id: 'msg-a', attempts_count: 1 });
  });

  it('accepts a raw call with x-api-key and anthropic-version, forwards anthropic-beta, and defaults the version', async () => {
    const { accountId, key } = await client();
    const body = { model: 'msg-model', max_tokens: 50, messages: [{ role: 'user', content: 'raw call' }] };
    const res = await post(body, { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'anthropic-beta': 'prompt-caching-2024-07-31' });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gateway-trace')).toBeTruthy();
    const json = (await res.json()) as Anthropic.Message;
    expect(json.content[0]).toEqual({ type: 'text', text: 'Echo: raw call' });
    const forwarded = h.sim.requests.at(-1)!;
    expect(forwarded.headers['anthropic-version']).toBe('2023-06-01');
    expect(forwarded.headers['anthropic-beta']).toBe('prompt-caching-2024-07-31');
    expect(forwarded.headers['x-api-key']).toBe('key-msg-a');
    const cost1 = expectedCost(promptTokens('messages', body), 0, tokens('Echo: raw call'));
    expect(await balance(accountId)).toBe(START - cost1);

    // Without a version header the upstream still gets one (it requires it).
    const bare = await post(body, { authorization: `Bearer ${key}` });
    expect(bare.status).toBe(200);
    expect(h.sim.requests.at(-1)!.headers['anthropic-version']).toBe('2023-06-01');
    expect(await balance(accountId)).toBe(START - 2n * cost1);
  });

  it('streams with messages.stream() and create({stream: true}) and settles on the reported usage', async () => {
    const { accountId, anthropic } = await client();
    const messages = [{ role: 'user' as const, content: 'one two three' }];
    const stream = anthropic.messages.stream({ model: 'msg-model-2024', max_tokens: 300, messages });
    let text = '';
    stream.on('text', (delta) => (text += delta));
    const final = await stream.finalMessage();
    expect(text).toBe('Echo: one two three');
    expect(final.content).toEqual([expect.objectContaining({ type: 'text', text: 'Echo: one two three' })]);
    expect(final.stop_reason).toBe('end_turn');
    const prompt = promptTokens('messages', { messages });
    const output = tokens('Echo: one two three');
    expect(final.usage).toMatchObject({ input_tokens: prompt, output_tokens: output });
    const first = await lastSettled(accountId);
    expect(first.call).toMatchObject({ status: 'success', input_tokens: prompt, output_tokens: output });
    expect(await balance(accountId)).toBe(START - expectedCost(prompt, 0, output));

    const events = await anthropic.messages.create({ model: 'msg-model', max_tokens: 300, messages, stream: true });
    const types: string[] = [];
    let streamed = '';
    for await (const event of events) {
      types.push(event.type);
      if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') streamed += event.delta.text;
    }
    expect(streamed).toBe('Echo: one two three');
    expect(types[0]).toBe('message_start');
    expect(types.slice(-2)).toEqual(['message_delta', 'message_stop']);
    await lastSettled(accountId, 2);
    expect(await balance(accountId)).toBe(START - 2n * expectedCost(prompt, 0, output));
  });

  it('streams the raw frames unchanged, ping included, and bills a cache write from message_start', async () => {
    const { accountId, key } = await client();
    const body = { model: 'msg-model', max_tokens: 100, stream: true, system: [{ type: 'text', text: 'Stay on topic [cache]' }], messages: [{ role: 'user', content: 'alpha beta' }] };
    const res = await post(body, { 'x-api-key': key, 'anthropic-version': '2023-06-01' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const text = await res.text();
    const names = [...text.matchAll(/^event: (\S+)$/gm)].map((m) => m[1]);
    expect(names).toEqual([
      'message_start',
      'content_block_start',
      'ping',
      'content_block_delta',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    const prompt = promptTokens('messages', body);
    const half = cachedTokensFor(prompt);
    const output = tokens('Echo: alpha beta');
    const settled = await lastSettled(accountId);
    expect(settled.call).toMatchObject({ status: 'success', input_tokens: prompt, cached_tokens: 0, output_tokens: output });
    expect(await balance(accountId)).toBe(START - expectedCost(prompt, 0, output, half, 1.25));
  });

  it('round-trips a tool call: tool_use block, then the tool_result', async () => {
    const { accountId, anthropic } = await client();
    const tools: Anthropic.Tool[] = [
      {
        name: 'get_weather',
        description: 'Weather of a city',
        input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      },
    ];
    const ask: Anthropic.MessageParam = { role: 'user', content: 'Please call get_weather {"city":"Paris"}' };
    const first = await anthropic.messages.create({ model: 'msg-model', max_tokens: 100, tools, messages: [ask] });
    expect(first.stop_reason).toBe('tool_use');
    const use = first.content.find((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use')!;
    expect(use).toMatchObject({ type: 'tool_use', name: 'get_weather', input: { city: 'Paris' } });
    const callOutput = outputTokens('', [{ name: 'get_weather', arguments: JSON.stringify({ city: 'Paris' }) }]);
    expect(first.usage.output_tokens).toBe(callOutput);

    const followUp: Anthropic.MessageParam[] = [
      ask,
      { role: 'assistant', content: first.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: '18C and sunny' }] },
    ];
    const second = await anthropic.messages.create({ model: 'msg-model', max_tokens: 100, tools, messages: followUp });
    expect(second.content).toEqual([{ type: 'text', text: 'Tool get_weather returned: 18C and sunny' }]);
    expect(second.stop_reason).toBe('end_turn');

    // The same call streamed: the SDK rebuilds the input from the input_json_delta frames.
    const streamed = await anthropic.messages.stream({ model: 'msg-model', max_tokens: 100, tools, tool_choice: { type: 'tool', name: 'get_weather' }, messages: [{ role: 'user', content: 'weather please' }] }).finalMessage();
    // The input is generated from the tool's schema (a string city).
    expect(streamed.content).toEqual([expect.objectContaining({ type: 'tool_use', name: 'get_weather', input: { city: expect.any(String) } })]);
    const forcedInput = (streamed.content[0] as Anthropic.ToolUseBlock).input;
    await lastSettled(accountId, 3);

    const cost =
      expectedCost(promptTokens('messages', { messages: [ask] }), 0, callOutput) +
      expectedCost(promptTokens('messages', { messages: followUp }), 0, tokens('Tool get_weather returned: 18C and sunny')) +
      expectedCost(promptTokens('messages', { messages: [{ role: 'user', content: 'weather please' }] }), 0, outputTokens('', [{ name: 'get_weather', arguments: JSON.stringify(forcedInput) }]));
    expect(await balance(accountId)).toBe(START - cost);
  });

  it('fails over on 529 and 500, never retries 4xx, and passes upstream errors through as api_error', async () => {
    const { accountId, anthropic } = await client();
    const messages = [{ role: 'user' as const, content: 'failover' }];
    h.sim.enqueue('http_529');
    const ok = await anthropic.messages.create({ model: 'msg-model', max_tokens: 50, messages });
    expect(ok.content[0]).toMatchObject({ text: 'Echo: failover' });
    expect(h.sim.requests.map((r) => r.apiKey)).toEqual(['key-msg-a', 'key-msg-b']);
    expect((await settledCalls(accountId)).at(-1)!.call).toMatchObject({ status: 'success', attempts_count: 2, channel_id: 'msg-b' });

    h.sim.reset();
    h.sim.enqueue('http_500');
    const ok2 = await anthropic.messages.create({ model: 'msg-model', max_tokens: 50, messages, stream: true });
    let text = '';
    for await (const e of ok2) if (e.type === 'content_block_delta' && e.delta.type === 'text_delta') text += e.delta.text;
    expect(text).toBe('Echo: failover');
    expect(h.sim.requests.map((r) => r.apiKey)).toEqual(['key-msg-a', 'key-msg-b']);
    await lastSettled(accountId, 2);
    const spent = START - (await balance(accountId));
    expect(spent).toBe(2n * expectedCost(promptTokens('messages', { messages }), 0, tokens('Echo: failover')));

    h.sim.reset();
    h.sim.enqueue('http_400');
    const bad = await anthropic.messages.create({ model: 'msg-model', max_tokens: 50, messages }).catch((e) => e);
    expect(bad).toBeInstanceOf(Anthropic.BadRequestError);
    expect(bad.status).toBe(400);
    expect(bad.error).toEqual({ type: 'error', error: { type: 'api_error', message: expect.any(String) } });
    expect(h.sim.requests).toHaveLength(1);

    h.sim.reset();
    h.sim.enqueue('http_429');
    const limited = await anthropic.messages.create({ model: 'msg-model', max_tokens: 50, messages }).catch((e) => e);
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('1');
    expect(h.sim.requests).toHaveLength(1);

    h.sim.reset();
    h.sim.enqueue('http_500', 'http_503');
    const down = await anthropic.messages.create({ model: 'msg-model', max_tokens: 50, messages }).catch((e) => e);
    expect(down).toBeInstanceOf(Anthropic.APIError);
    expect(down.status).toBe(503);
    expect(down.error).toMatchObject({ type: 'error', error: { type: 'api_error' } });
    expect(down.error.error.message).toBeTruthy();
    expect(h.sim.requests.map((r) => r.apiKey)).toEqual(['key-msg-a', 'key-msg-b']);

    // Failures cost nothing and leave nothing held.
    const w = await wallet(accountId);
    expect(w.held).toBe(0n);
    expect(START - w.balance).toBe(spent);
  });

  it('answers errors in the messages shape', async () => {
    const { accountId, key, anthropic } = await client({ allowed_models: ['msg-model', 'chat-model'] });
    const headers = { 'x-api-key': key, 'anthropic-version': '2023-06-01' };
    const errorOf = async (res: Response) => ({ status: res.status, body: (await res.json()) as { type: string; error: { type: string; message: string; code?: unknown } } });

    const missing = await errorOf(await post({ model: 'msg-model', messages: [{ role: 'user', content: 'x' }] }, headers));
    expect(missing.status).toBe(400);
    expect(missing.body).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: expect.stringMatching(/max_tokens/) } });
    expect(missing.body.error.code).toBeUndefined();
    for (const body of [
      { model: 'msg-model', max_tokens: 0, messages: [{ role: 'user', content: 'x' }] },
      { model: 'msg-model', max_tokens: 1.5, messages: [{ role: 'user', content: 'x' }] },
      { model: 'msg-model', max_tokens: 10, messages: [{ role: 'system', content: 'x' }] },
      { model: 'msg-model', max_tokens: 10, messages: [] },
      { model: 'msg-model', max_tokens: 10, messages: [{ role: 'user', content: 'x' }], tools: [{ name: 'f' }] },
      { model: 'msg-model', max_tokens: 10, messages: [{ role: 'user', content: 'x' }], tool_choice: { type: 'tool' } },
    ]) {
      const r = await errorOf(await post(body, headers));
      expect(r.status).toBe(400);
      expect(r.body.error.type).toBe('invalid_request_error');
    }
    // Unknown fields and server tools pass through.
    const loose = await post(
      { model: 'msg-model', max_tokens: 10, messages: [{ role: 'user', content: [{ type: 'text', text: 'x' }] }], metadata: { user_id: 'u1' }, tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 1 }], service_tier: 'auto' },
      headers,
    );
    expect(loose.status).toBe(200);
    expect(h.sim.requests.at(-1)!.body).toMatchObject({ service_tier: 'auto', tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 1 }] });
    h.sim.reset();

    const unknown = await anthropic.messages.create({ model: 'nope', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(unknown.status).toBe(400);
    expect(unknown.error).toEqual({ type: 'error', error: { type: 'not_found_error', message: expect.stringMatching(/nope/) } });

    const disallowed = await anthropic.messages.create({ model: 'resp-model', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(disallowed.status).toBe(400);
    expect(disallowed.error.error.type).toBe('invalid_request_error');

    // chat-model exists but has no messages channel.
    const noChannel = await anthropic.messages.create({ model: 'chat-model', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(noChannel.status).toBe(503);
    expect(noChannel.error.error.type).toBe('overloaded_error');

    // 40.44 USD at $2 per 1M output tokens is 20.22M tokens (the SDK wants a timeout for such a cap).
    const broke = await anthropic.messages
      .create({ model: 'msg-model', max_tokens: 30_000_000, messages: [{ role: 'user', content: 'x' }] }, { timeout: 10_000 })
      .catch((e) => e);
    expect(broke).toBeInstanceOf(Anthropic.APIError);
    expect(broke.status).toBe(402);
    expect(broke.error).toEqual({ type: 'error', error: { type: 'billing_error', message: expect.any(String) } });

    const badKey = await errorOf(await post({ model: 'msg-model', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }, { 'anthropic-version': '2023-06-01' }));
    expect(badKey.status).toBe(401);
    expect(badKey.body.error.type).toBe('authentication_error');

    expect(h.sim.requests).toHaveLength(0);
    const w = await wallet(accountId);
    expect(w.held).toBe(0n);
    expect(w.balance).toBe(START - expectedCost(promptTokens('messages', { messages: [{ role: 'user', content: [{ type: 'text', text: 'x' }] }] }), 0, tokens('Echo: x')));
  });

  it('settles a cut stream as interrupted on what was delivered, without message_stop', async () => {
    const { accountId, key, anthropic } = await client();
    const body = { model: 'msg-model', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'a b c d e f g h' }] };
    // message_start, content_block_start, ping, content_block_delta ("Echo: "), then the socket dies.
    h.sim.enqueue('cut_stream_after:4');
    const res = await post(body, { 'x-api-key': key, 'anthropic-version': '2023-06-01' });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect([...text.matchAll(/^event: (\S+)$/gm)].map((m) => m[1])).toEqual(['message_start', 'content_block_start', 'ping', 'content_block_delta']);
    expect(text).not.toContain('message_stop');
    const settled = await lastSettled(accountId);
    const prompt = promptTokens('messages', body);
    // No message_delta: output billed from the delivered characters ("Echo: " → 2 tokens).
    expect(settled.call).toMatchObject({ status: 'interrupted', error_code: 'upstream_error', input_tokens: prompt, output_tokens: 2 });
    expect(BigInt(settled.captured)).toBe(expectedCost(prompt, 0, 2));
    expect(await balance(accountId)).toBe(START - expectedCost(prompt, 0, 2));

    // The SDK sees the stream end early: no message_stop, no stop_reason.
    h.sim.enqueue('cut_stream_after:5');
    const events = await anthropic.messages.create({ model: 'msg-model', max_tokens: 100, messages: [{ role: 'user', content: 'a b c d e f g h' }], stream: true });
    const types: string[] = [];
    try {
      for await (const e of events) types.push(e.type);
    } catch {
      // an SDK may also surface the early end as an error
    }
    expect(types).not.toContain('message_stop');
    expect(types).not.toContain('message_delta');
    expect((await lastSettled(accountId, 2)).call.status).toBe('interrupted');
  });

  it('forwards an in-stream error frame unchanged and settles as interrupted', async () => {
    const { accountId, key, anthropic } = await client();
    const body = { model: 'msg-model', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'one two three four' }] };
    h.sim.enqueue('error_frame_after:5');
    const res = await post(body, { 'x-api-key': key, 'anthropic-version': '2023-06-01' });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text.endsWith('event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n')).toBe(true);
    expect(text).not.toContain('message_stop');
    const settled = await lastSettled(accountId);
    const prompt = promptTokens('messages', body);
    // "Echo: " + "one " delivered: 10 characters → 3 tokens.
    expect(settled.call).toMatchObject({ status: 'interrupted', input_tokens: prompt, output_tokens: 3 });
    expect(await balance(accountId)).toBe(START - expectedCost(prompt, 0, 3));

    h.sim.enqueue('error_frame_after:3');
    const events = await anthropic.messages.create({ model: 'msg-model', max_tokens: 100, messages: [{ role: 'user', content: 'x' }], stream: true });
    const failure = await (async () => {
      for await (const e of events) void e;
    })().catch((e) => e);
    expect(failure).toBeInstanceOf(Anthropic.APIError);
    expect(failure.error).toEqual({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
    expect((await lastSettled(accountId, 2)).call.status).toBe('interrupted');
  });

  it('bills a stream without usage from the estimate and the delivered characters', async () => {
    // (The SDK's MessageStream needs usage in message_delta, as the real API always sends it: raw HTTP here.)
    const { accountId, key } = await client();
    h.sim.enqueue('no_usage');
    const messages = [{ role: 'user', content: 'quiet please' }];
    const res = await post({ model: 'msg-model', max_tokens: 100, stream: true, messages }, { 'x-api-key': key, 'anthropic-version': '2023-06-01' });
    const text = await res.text();
    expect(text).toContain('event: message_stop');
    expect(text).not.toContain('"usage"');
    const settled = await lastSettled(accountId);
    const prompt = Math.ceil(Buffer.byteLength(JSON.stringify({ messages })) / 4);
    const output = Math.ceil('Echo: quiet please'.length / 4);
    expect(settled.call).toMatchObject({ status: 'success', input_tokens: prompt, output_tokens: output });
    expect(await balance(accountId)).toBe(START - expectedCost(prompt, 0, output));
  });
});
