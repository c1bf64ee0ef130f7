import OpenAI from 'openai';
import type { ResponseStreamEvent } from 'openai/resources/responses/responses';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { cachedTokensFor, countTokens, outputTokens, promptTokens, reasoningTokensFor, startSimulator } from '../../src/simulator';
import { parseUsd } from '../../src/money/usd';
import type { CallRecord } from '../../src/events/catalog';
import { startTestGateway } from '../support/gateway';
import { chatConfig, expectedCost, startChatHarness, type ChatHarness } from './support';

let h: ChatHarness;
beforeAll(async () => {
  h = await startChatHarness({ chatTimeoutMs: 3000 });
});
afterAll(() => h.close());
beforeEach(() => h.sim.reset());

const GRANT = parseUsd('40.44');

async function client(keyFields: Record<string, unknown> = {}) {
  const { accountId, key, keyId } = await h.t.accountWithKey(keyFields);
  return { accountId, keyId, key, openai: new OpenAI({ apiKey: key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 }) };
}

const wallet = (accountId: string) => h.t.gateway.ledger.wallet(accountId);
/** The balance once no hold is open: a stream's end reaches the client before its settlement is written. */
const balance = async (accountId: string) => {
  await expect.poll(async () => (await wallet(accountId)).held).toBe(0n);
  return (await wallet(accountId)).balance;
};

async function walletEvents(accountId: string) {
  // Settlements are queued when the answer leaves and appended right after it.
  await h.t.gateway.ledger.idle();
  return h.t.gateway.storage.store.readStream(`wallet-${accountId}`);
}

async function lastSettled(accountId: string) {
  await expect.poll(async () => (await wallet(accountId)).held).toBe(0n);
  const events = await walletEvents(accountId);
  const settled = events.filter((e) => e.type === 'HoldSettled').at(-1)!;
  return settled.data as { captured: string; call: CallRecord };
}

/** The key sequence of the spec's responses stream, in order (other events may sit between). */
const KEY_SEQUENCE = [
  'response.created',
  'response.in_progress',
  'response.output_item.added',
  'response.output_text.delta',
  'response.output_text.done',
  'response.output_item.done',
  'response.completed',
];

function expectKeySequence(types: string[]) {
  let at = 0;
  for (const type of types) if (type === KEY_SEQUENCE[at]) at++;
  expect(at, `key sequence in ${types.join(', ')}`).toBe(KEY_SEQUENCE.length);
}

/** The assistant text of a response's message items. */
function messageText(response: { output: Array<{ type: string; content?: unknown }> }): string {
  return response.output
    .flatMap((item) => (item.type === 'message' ? (item.content as Array<{ type: string; text?: string }>) : []))
    .map((part) => (part.type === 'output_text' ? (part.text ?? '') : ''))
    .join('');
}

function expectIncreasingSequence(events: ResponseStreamEvent[]) {
  const numbers = events.map((e) => e.sequence_number);
  expect(numbers[0]).toBe(0);
  for (let i = 1; i < numbers.length; i++) expect(numbers[i]!).toBeGreaterThan(numbers[i - 1]!);
}

describe('POST /v1/responses with the openai SDK', () => {
  it('answers non-streaming and settles exactly on the reported usage (cached and reasoning tokens)', async () => {
    const { accountId, openai } = await client();
    const instructions = 'Be brief [cache]';
    const input = [{ role: 'user' as const, content: 'Hello there' }];
    const response = await openai.responses.create({ model: 'resp-model', instructions, input, reasoning: { effort: 'high' } });
    expect(response.object).toBe('response');
    expect(response.status).toBe('completed');
    expect(response.output_text).toBe('Echo: Hello there');
    expect(response.output.map((item) => item.type)).toEqual(['reasoning', 'message']);

    const prompt = promptTokens('responses', { instructions, input });
    const cached = cachedTokensFor(prompt);
    const output = outputTokens('Echo: Hello there') + reasoningTokensFor('high');
    expect(response.usage).toMatchObject({
      input_tokens: prompt,
      input_tokens_details: { cached_tokens: cached },
      output_tokens: output,
      output_tokens_details: { reasoning_tokens: 32 },
    });
    expect(cached).toBeGreaterThan(0);

    const forwarded = h.sim.requests.at(-1)!;
    expect(forwarded.path).toBe('/resp-a/v1/responses');
    expect(forwarded.model).toBe('resp-model-upstream');
    expect(forwarded.apiKey).toBe('key-resp-a');
    expect(forwarded.body).toMatchObject({ instructions, input, reasoning: { effort: 'high' } });

    expect(await balance(accountId)).toBe(GRANT - expectedCost(prompt, cached, output));
    await expect.poll(async () => (await wallet(accountId)).held).toBe(0n);
    const { call } = await lastSettled(accountId);
    expect(call).toMatchObject({ status: 'success', endpoint: 'responses', input_tokens: prompt, cached_tokens: cached, output_tokens: output, attempts_count: 1, channel_id: 'resp-a' });
  });

  it('accepts a string input and an alias, without instructions', async () => {
    const { accountId, openai } = await client();
    const response = await openai.responses.create({ model: 'resp-model-2024', input: 'plain string' });
    expect(response.output_text).toBe('Echo: plain string');
    const prompt = promptTokens('responses', { input: 'plain string' });
    expect(response.usage?.input_tokens).toBe(prompt);
    expect(await balance(accountId)).toBe(GRANT - expectedCost(prompt, 0, outputTokens('Echo: plain string')));
  });

  it('streams with create({stream: true}): increasing sequence numbers, the key sequence, exact settlement', async () => {
    const { accountId, openai } = await client();
    const input = [{ role: 'user' as const, content: 'one two three' }];
    const stream = await openai.responses.create({ model: 'resp-model', input, stream: true });
    const events: ResponseStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    expectIncreasingSequence(events);
    expectKeySequence(events.map((e) => e.type));

    const created = events.find((e) => e.type === 'response.created') as Extract<ResponseStreamEvent, { type: 'response.created' }>;
    expect(created.response.usage ?? null).toBeNull();
    const text = events.flatMap((e) => (e.type === 'response.output_text.delta' ? [e.delta] : [])).join('');
    expect(text).toBe('Echo: one two three');
    const completed = events.at(-1) as Extract<ResponseStreamEvent, { type: 'response.completed' }>;
    expect(completed.type).toBe('response.completed');
    const prompt = promptTokens('responses', { input });
    const output = outputTokens('Echo: one two three');
    expect(completed.response.usage).toMatchObject({ input_tokens: prompt, output_tokens: output });
    expect(await balance(accountId)).toBe(GRANT - expectedCost(prompt, 0, output));
    expect((await lastSettled(accountId)).call.status).toBe('success');
  });

  it('streams with client.responses.stream(): deltas, final response and exact settlement', async () => {
    const { accountId, openai } = await client();
    const instructions = 'Answer [cache]';
    const input = [{ role: 'user' as const, content: [{ type: 'input_text' as const, text: 'streamed helper' }] }];
    const stream = openai.responses.stream({ model: 'resp-model', instructions, input, reasoning: { effort: 'low' } });
    const types: string[] = [];
    const sequence: number[] = [];
    let text = '';
    stream.on('event', (event) => {
      types.push(event.type);
      sequence.push(event.sequence_number);
    });
    stream.on('response.output_text.delta', (event) => {
      text += event.delta;
    });
    const final = await stream.finalResponse();
    expect(text).toBe('Echo: streamed helper');
    // The helper's final response has no `output_text` convenience unless it parsed something.
    expect(messageText(final)).toBe('Echo: streamed helper');
    expectKeySequence(types);
    expect(sequence).toEqual(sequence.map((_, i) => i));

    const prompt = promptTokens('responses', { instructions, input });
    const cached = cachedTokensFor(prompt);
    const output = outputTokens('Echo: streamed helper') + reasoningTokensFor('low');
    expect(final.usage).toMatchObject({ input_tokens: prompt, input_tokens_details: { cached_tokens: cached }, output_tokens: output });
    expect(await balance(accountId)).toBe(GRANT - expectedCost(prompt, cached, output));
  });

  it('forwards the SSE event names unchanged (raw HTTP)', async () => {
    const { key } = await client();
    const res = await fetch(`${h.baseUrl}/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'resp-model', input: [{ role: 'user', content: 'raw' }], stream: true }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/text\/event-stream/);
    expect(res.headers.get('x-gateway-trace')).toBeTruthy();
    const body = await res.text();
    const names = [...body.matchAll(/^event: (.+)$/gm)].map((m) => m[1]!);
    expectKeySequence(names);
    expect(names.at(-1)).toBe('response.completed');
  });

  it('round-trips a function call: function_call item, then a function_call_output input item', async () => {
    const { accountId, openai } = await client();
    const tools = [
      {
        type: 'function' as const,
        name: 'get_weather',
        description: 'weather for a city',
        parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
        strict: true,
      },
    ];
    const first = [{ role: 'user' as const, content: 'please call get_weather {"city":"Paris"}' }];
    const r1 = await openai.responses.create({ model: 'resp-model', input: first, tools });
    expect(r1.output).toHaveLength(1);
    const call = r1.output[0]!;
    if (call.type !== 'function_call') throw new Error(`expected a function_call, got ${call.type}`);
    expect(call.name).toBe('get_weather');
    expect(JSON.parse(call.arguments)).toEqual({ city: 'Paris' });
    expect(call.call_id).toBeTruthy();
    const prompt1 = promptTokens('responses', { input: first });
    const output1 = outputTokens('', [{ name: call.name, arguments: call.arguments }]);
    expect(r1.usage).toMatchObject({ input_tokens: prompt1, output_tokens: output1 });

    const second = [
      ...first,
      { type: 'function_call' as const, call_id: call.call_id, name: call.name, arguments: call.arguments },
      { type: 'function_call_output' as const, call_id: call.call_id, output: '{"temp":21}' },
    ];
    const r2 = await openai.responses.create({ model: 'resp-model', input: second, tools });
    expect(r2.output_text).toBe('Tool get_weather returned: {"temp":21}');
    const prompt2 = promptTokens('responses', { input: second });
    const output2 = outputTokens(r2.output_text);
    expect(await balance(accountId)).toBe(GRANT - expectedCost(prompt1, 0, output1) - expectedCost(prompt2, 0, output2));
  });

  it('streams a function call and settles on its usage', async () => {
    const { accountId, openai } = await client();
    const input = [{ role: 'user' as const, content: 'call lookup {"q":"a longer query string"}' }];
    const tools = [{ type: 'function' as const, name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } } }, strict: false }];
    const stream = await openai.responses.create({ model: 'resp-model', input, tools, stream: true });
    let args = '';
    let done: string | null = null;
    for await (const event of stream) {
      if (event.type === 'response.function_call_arguments.delta') args += event.delta;
      if (event.type === 'response.function_call_arguments.done') done = event.arguments;
    }
    expect(args).toBe('{"q":"a longer query string"}');
    expect(done).toBe(args);
    const prompt = promptTokens('responses', { input });
    expect(await balance(accountId)).toBe(GRANT - expectedCost(prompt, 0, outputTokens('', [{ name: 'lookup', arguments: args }])));
  });

  it('fails over from resp-a to resp-b on 5xx, streaming or not', async () => {
    const { accountId, openai } = await client();
    h.sim.enqueue('http_500');
    const ok = await openai.responses.create({ model: 'resp-model', input: [{ role: 'user', content: 'failover' }] });
    expect(ok.output_text).toBe('Echo: failover');
    expect(h.sim.requests.map((r) => r.path)).toEqual(['/resp-a/v1/responses', '/resp-b/v1/responses']);
    expect(h.sim.requests.map((r) => r.apiKey)).toEqual(['key-resp-a', 'key-resp-b']);
    const { call } = await lastSettled(accountId);
    expect(call).toMatchObject({ status: 'success', attempts_count: 2, channel_id: 'resp-b' });

    h.sim.reset();
    h.sim.enqueue('http_503');
    const stream = openai.responses.stream({ model: 'resp-model', input: [{ role: 'user', content: 'stream failover' }] });
    expect(messageText(await stream.finalResponse())).toBe('Echo: stream failover');
    expect(h.sim.requests.map((r) => r.apiKey)).toEqual(['key-resp-a', 'key-resp-b']);
    await expect.poll(async () => (await wallet(accountId)).held).toBe(0n);
  });

  it('does not retry 4xx and passes upstream errors through in the chat shape', async () => {
    const { accountId, openai } = await client();
    h.sim.enqueue('http_400');
    const bad = await openai.responses.create({ model: 'resp-model', input: [{ role: 'user', content: 'bad' }] }).catch((e) => e);
    expect(bad).toBeInstanceOf(OpenAI.BadRequestError);
    expect(bad.error).toMatchObject({ code: 'invalid_request', type: 'invalid_request_error' });
    expect(h.sim.requests).toHaveLength(1);

    h.sim.reset();
    h.sim.enqueue('http_429');
    const limited = await openai.responses.create({ model: 'resp-model', input: [{ role: 'user', content: 'limited' }] }).catch((e) => e);
    expect(limited.status).toBe(429);
    expect(limited.error).toMatchObject({ code: 'rate_limit_exceeded', type: 'rate_limit_error' });
    expect(limited.headers.get('retry-after')).toBe('1');
    expect(h.sim.requests).toHaveLength(1);

    h.sim.reset();
    h.sim.enqueue('http_503', 'http_503');
    const down = await openai.responses.create({ model: 'resp-model', input: [{ role: 'user', content: 'down' }] }).catch((e) => e);
    expect(down.status).toBe(503);
    expect(down.error).toMatchObject({ code: 'upstream_error', type: 'api_error' });
    expect(typeof down.error.message).toBe('string');
    expect(h.sim.requests).toHaveLength(2);

    // Nothing billed for failed calls; every hold released.
    expect(await balance(accountId)).toBe(GRANT);
    await expect.poll(async () => (await wallet(accountId)).held).toBe(0n);
    const released = (await walletEvents(accountId)).filter((e) => e.type === 'HoldReleased');
    expect(released.map((e) => (e.data as { call: CallRecord }).call.error_code)).toEqual(['invalid_request', 'rate_limit_exceeded', 'upstream_error']);
    expect((released.at(-1)!.data as { call: CallRecord }).call.attempts_count).toBe(2);
  });

  it('answers gateway errors in the chat shape: invalid body, 402, unknown model', async () => {
    const { openai, key } = await client();
    const missing = await openai.responses.create({ model: 'resp-model' } as never).catch((e) => e);
    expect(missing.status).toBe(400);
    expect(missing.error).toMatchObject({ code: 'invalid_request', type: 'invalid_request_error' });
    expect(missing.error.message).toMatch(/input/);

    const badCap = await openai.responses.create({ model: 'resp-model', input: 'x', max_output_tokens: 0 }).catch((e) => e);
    expect(badCap.status).toBe(400);
    expect(badCap.error.message).toMatch(/max_output_tokens/);

    // 40.44 USD at $2 per 1M output tokens is 20.22M tokens.
    const poor = await openai.responses.create({ model: 'resp-model', input: 'x', max_output_tokens: 30_000_000 }).catch((e) => e);
    expect(poor.status).toBe(402);
    expect(poor.error).toMatchObject({ code: 'quota_exceeded', type: 'insufficient_quota' });

    const unknown = await openai.responses.create({ model: 'no-such-model', input: 'x' }).catch((e) => e);
    expect(unknown.status).toBe(400);
    expect(unknown.error).toMatchObject({ code: 'model_not_found', type: 'invalid_request_error' });
    expect(h.sim.requests).toHaveLength(0);

    // Raw HTTP: the exact body shape.
    const raw = await fetch(`${h.baseUrl}/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'resp-model', input: [{ content: 'no role' }] }),
    });
    expect(raw.status).toBe(400);
    const body = (await raw.json()) as { error: { message: string; type: string; code: string } };
    expect(Object.keys(body)).toEqual(['error']);
    expect(body.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_request', message: expect.stringMatching(/role/) });
  });

  it('settles an interrupted stream as interrupted, on the delivered characters', async () => {
    const { accountId, openai } = await client();
    // created, in_progress, output_item.added, content_part.added, output_text.delta("Echo: ") then the cut.
    h.sim.enqueue('cut_stream_after:5');
    const input = [{ role: 'user' as const, content: 'a b c d e f g h' }];
    const stream = await openai.responses.create({ model: 'resp-model', input, stream: true });
    const types: string[] = [];
    for await (const event of stream) types.push(event.type);
    expect(types).toContain('response.output_text.delta');
    expect(types).not.toContain('response.completed');

    await expect.poll(async () => (await wallet(accountId)).held).toBe(0n);
    const settled = await lastSettled(accountId);
    expect(settled.call.status).toBe('interrupted');
    // No usage arrived: the estimated prompt (JSON bytes / 4) and the delivered characters.
    const prompt = countTokens(JSON.stringify({ input }));
    const output = Math.ceil('Echo: '.length / 4);
    expect(settled.call).toMatchObject({ input_tokens: prompt, output_tokens: output });
    expect(BigInt(settled.captured)).toBe(expectedCost(prompt, 0, output));
    expect(await balance(accountId)).toBe(GRANT - expectedCost(prompt, 0, output));
  });

  it('forwards an in-protocol error frame unchanged and settles the stream as interrupted', async () => {
    const { accountId, openai } = await client();
    h.sim.enqueue('error_frame_after:5');
    const stream = await openai.responses.create({ model: 'resp-model', input: 'error frame please', stream: true });
    const events: ResponseStreamEvent[] = [];
    // The SDK yields a Responses `error` event as an ordinary event (it is part of ResponseStreamEvent).
    for await (const event of stream) events.push(event);
    expectIncreasingSequence(events);
    const last = events.at(-1)!;
    expect(last).toMatchObject({ type: 'error', code: 'server_error', sequence_number: 5 });
    expect(events.map((e) => e.type)).not.toContain('response.completed');
    await expect.poll(async () => (await wallet(accountId)).held).toBe(0n);
    const settled = await lastSettled(accountId);
    expect(settled.call.status).toBe('interrupted');
    expect(settled.call.output_tokens).toBeGreaterThan(0);
  });

  it('bills a complete stream without usage on the estimate and the delivered characters', async () => {
    const { accountId, openai } = await client();
    h.sim.enqueue('no_usage');
    const input = [{ role: 'user' as const, content: 'no usage here' }];
    const stream = await openai.responses.create({ model: 'resp-model', input, stream: true });
    for await (const event of stream) void event;
    const settled = await lastSettled(accountId);
    const prompt = countTokens(JSON.stringify({ input }));
    const output = Math.ceil('Echo: no usage here'.length / 4);
    expect(settled.call).toMatchObject({ status: 'success', input_tokens: prompt, output_tokens: output });
    expect(await balance(accountId)).toBe(GRANT - expectedCost(prompt, 0, output));
  });

  it('refuses a built-in tool the channels do not list with 400 tool_not_supported (no stream needed)', async () => {
    const { accountId, openai } = await client();
    for (const tool of [{ type: 'web_search' as const }, { type: 'image_generation' as const }]) {
      const error = await openai.responses.create({ model: 'resp-model', input: 'search', tools: [tool] }).catch((e) => e);
      expect(error.status).toBe(400);
      expect(error.error).toMatchObject({ code: 'tool_not_supported', type: 'invalid_request_error' });
      expect(error.error.message).toContain(tool.type);
    }
    expect(h.sim.requests).toHaveLength(0);
    expect(await balance(accountId)).toBe(GRANT);
  });
});

describe('POST /v1/responses with built-in tools on a channel that lists them', () => {
  it('routes web_search and image_generation (non-streaming) only to the channels that support them', async () => {
    const sim = await startSimulator();
    const base = chatConfig(sim);
    const config = {
      ...base,
      channels: base.channels.map((c) => (c.id === 'resp-b' ? { ...c, tools: ['web_search', 'image_generation'] } : c)),
    };
    const t = await startTestGateway({ config, chatTimeoutMs: 3000 });
    try {
      await t.gateway.app.listen({ port: 0, host: '127.0.0.1' });
      const port = (t.gateway.app.server.address() as { port: number }).port;
      const { key } = await t.accountWithKey();
      const openai = new OpenAI({ apiKey: key, baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0 });
      const response = await openai.responses.create({
        model: 'resp-model',
        input: 'find it',
        tools: [{ type: 'web_search' }, { type: 'image_generation', size: '1024x1024' }],
      });
      expect(response.output_text).toBe('Echo: find it');
      expect(sim.requests.map((r) => r.apiKey)).toEqual(['key-resp-b']);
    } finally {
      await t.close();
      await sim.close();
    }
  });
});
