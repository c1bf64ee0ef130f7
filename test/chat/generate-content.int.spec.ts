import { ApiError, GoogleGenAI, type Content } from '@google/genai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/money/usd';
import { countTokens, promptTokens } from '../../src/simulator';
import { expectedCost, startChatHarness, type ChatHarness } from './support';

let h: ChatHarness;
beforeAll(async () => {
  h = await startChatHarness({ chatTimeoutMs: 3000 });
});
afterAll(() => h.close());
beforeEach(() => h.sim.reset());

const GRANT = parseUsd('40.44');

async function client(keyFields: Record<string, unknown> = {}) {
  const { accountId, key, keyId } = await h.t.accountWithKey(keyFields);
  return { accountId, keyId, key, ai: new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: h.baseUrl } }) };
}

const wallet = (accountId: string) => h.t.gateway.ledger.wallet(accountId);
const balance = async (accountId: string) => (await wallet(accountId)).balance;

/** The last settlement of an account's wallet, as the event store has it. */
async function lastSettlement(accountId: string) {
  // Settlements are queued when the answer leaves and appended right after it.
  await h.t.gateway.ledger.idle();
  const events = await h.t.gateway.storage.store.readStream(`wallet-${accountId}`);
  const settled = events.filter((e) => e.type === 'HoldSettled').at(-1);
  return settled?.data as
    | { captured: string; call: { status: string; input_tokens: number; output_tokens: number; cached_tokens: number; error_code: string | null; channel_id: string; attempts_count: number } }
    | undefined;
}

/** The prompt tokens the upstream counted for the last forwarded request. */
const forwardedPrompt = () => promptTokens('generate-content', h.sim.requests.at(-1)!.body);

const post = (path: string, body: unknown, headers: Record<string, string>) =>
  fetch(`${h.baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

/** The `error` object of a generate-content error body. */
const errorOf = async (response: Response) => ((await response.json()) as { error: { code: number; message: string; status: string } }).error;

const userText = (text: string): Content[] => [{ role: 'user', parts: [{ text }] }];

describe('generate-content with @google/genai', () => {
  it('answers non-streaming, forwards natively, and settles exactly on usageMetadata', async () => {
    const { accountId, ai } = await client();
    const response = await ai.models.generateContent({
      model: 'gem-model',
      contents: 'Hello there',
      config: { systemInstruction: 'Be brief [cache]', temperature: 0.5 },
    });
    expect(response.text).toBe('Echo: Hello there');
    expect(response.candidates![0]!.finishReason).toBe('STOP');
    const u = response.usageMetadata!;
    expect(u.promptTokenCount).toBe(forwardedPrompt());
    expect(u.cachedContentTokenCount).toBeGreaterThan(0);

    const forwarded = h.sim.requests.at(-1)!;
    expect(forwarded.path).toBe('/gem-a/v1beta/models/gem-model-upstream:generateContent');
    expect(forwarded.headers['x-goog-api-key']).toBe('key-gem-a');
    expect(forwarded.body).not.toHaveProperty('model');
    expect((forwarded.body as { generationConfig: unknown }).generationConfig).toEqual({ temperature: 0.5 });

    const cost = expectedCost(u.promptTokenCount!, u.cachedContentTokenCount!, u.candidatesTokenCount!);
    expect(await balance(accountId)).toBe(GRANT - cost);
    expect((await wallet(accountId)).held).toBe(0n);
    const settled = await lastSettlement(accountId);
    expect(settled?.call).toMatchObject({
      status: 'success',
      input_tokens: u.promptTokenCount,
      cached_tokens: u.cachedContentTokenCount,
      output_tokens: u.candidatesTokenCount,
      channel_id: 'gem-a',
    });
  });

  it('bills thoughts as output tokens', async () => {
    const { accountId, ai } = await client();
    const response = await ai.models.generateContent({
      model: 'gem-model-2024',
      contents: userText('think first'),
      config: { thinkingConfig: { thinkingBudget: 512 } },
    });
    const u = response.usageMetadata!;
    expect(u.thoughtsTokenCount).toBeGreaterThan(0);
    const output = u.candidatesTokenCount! + u.thoughtsTokenCount!;
    expect(await balance(accountId)).toBe(GRANT - expectedCost(u.promptTokenCount!, 0, output));
    expect((await lastSettlement(accountId))?.call.output_tokens).toBe(output);
  });

  it('streams over SSE (alt=sse) and settles on the last chunk with usageMetadata', async () => {
    const { accountId, ai } = await client();
    const stream = await ai.models.generateContentStream({ model: 'gem-model', contents: 'one two three' });
    let text = '';
    let finish: string | undefined;
    let usage = null;
    let chunks = 0;
    for await (const chunk of stream) {
      chunks += 1;
      text += chunk.text ?? '';
      finish = chunk.candidates?.[0]?.finishReason ?? finish;
      usage = chunk.usageMetadata ?? usage;
    }
    expect(text).toBe('Echo: one two three');
    expect(chunks).toBe(4);
    expect(finish).toBe('STOP');
    const forwarded = h.sim.requests.at(-1)!;
    expect(forwarded.path).toBe('/gem-a/v1beta/models/gem-model-upstream:streamGenerateContent');
    expect(forwarded.query).toMatchObject({ alt: 'sse' });

    const prompt = forwardedPrompt();
    const output = countTokens('Echo: one two three');
    expect(usage).toMatchObject({ promptTokenCount: prompt, candidatesTokenCount: output });
    await expect.poll(async () => (await wallet(accountId)).held).toBe(0n);
    expect(await balance(accountId)).toBe(GRANT - expectedCost(prompt, 0, output));
    expect((await lastSettlement(accountId))?.call.status).toBe('success');
  });

  it('round-trips a function call: functionCall part, then a functionResponse part', async () => {
    const { accountId, ai } = await client();
    const tools = [
      {
        functionDeclarations: [
          {
            name: 'get_weather',
            description: 'Weather of a city',
            parametersJsonSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
          },
        ],
      },
    ];
    const question = userText('Please call get_weather {"city":"Paris"}');
    const first = await ai.models.generateContent({ model: 'gem-model', contents: question, config: { tools } });
    expect(first.functionCalls).toEqual([{ name: 'get_weather', args: { city: 'Paris' } }]);
    const u1 = first.usageMetadata!;
    expect(u1.candidatesTokenCount).toBe(countTokens('get_weather' + JSON.stringify({ city: 'Paris' })));
    const afterFirst = GRANT - expectedCost(u1.promptTokenCount!, 0, u1.candidatesTokenCount!);
    expect(await balance(accountId)).toBe(afterFirst);

    const second = await ai.models.generateContent({
      model: 'gem-model',
      contents: [
        ...question,
        first.candidates![0]!.content!,
        { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { temperature: 21 } } }] },
      ],
      config: { tools },
    });
    expect(second.text).toBe('Tool get_weather returned: {"temperature":21}');
    const forwarded = h.sim.requests.at(-1)!.body as { contents: Content[] };
    expect(forwarded.contents[1]!.parts![0]!.functionCall).toMatchObject({ name: 'get_weather', args: { city: 'Paris' } });
    expect(forwarded.contents[2]!.parts![0]!.functionResponse).toMatchObject({ name: 'get_weather', response: { temperature: 21 } });
    const u2 = second.usageMetadata!;
    expect(await balance(accountId)).toBe(afterFirst - expectedCost(u2.promptTokenCount!, 0, u2.candidatesTokenCount!));
  });

  it('streams a function call and counts it as delivered output', async () => {
    const { accountId, ai } = await client();
    const tools = [{ functionDeclarations: [{ name: 'get_time', parametersJsonSchema: { type: 'object', properties: {} } }] }];
    const stream = await ai.models.generateContentStream({ model: 'gem-model', contents: 'call get_time', config: { tools } });
    const calls = [];
    for await (const chunk of stream) calls.push(...(chunk.functionCalls ?? []));
    expect(calls).toEqual([{ name: 'get_time', args: {} }]);
    await expect.poll(async () => (await wallet(accountId)).held).toBe(0n);
    const settled = await lastSettlement(accountId);
    expect(settled?.call).toMatchObject({ status: 'success', output_tokens: countTokens('get_time{}') });
  });

  it('fails over from gem-a to gem-b on 5xx, streaming or not', async () => {
    const { accountId, ai } = await client();
    h.sim.enqueue('http_500');
    const ok = await ai.models.generateContent({ model: 'gem-model', contents: 'failover' });
    expect(ok.text).toBe('Echo: failover');
    expect(h.sim.requests.map((r) => r.apiKey)).toEqual(['key-gem-a', 'key-gem-b']);
    expect(h.sim.requests[1]!.path).toBe('/gem-b/v1beta/models/gem-model-upstream:generateContent');
    const settled = await lastSettlement(accountId);
    expect(settled?.call).toMatchObject({ status: 'success', channel_id: 'gem-b', attempts_count: 2 });

    h.sim.reset();
    h.sim.enqueue('http_503');
    const stream = await ai.models.generateContentStream({ model: 'gem-model', contents: 'stream failover' });
    let text = '';
    for await (const chunk of stream) text += chunk.text ?? '';
    expect(text).toBe('Echo: stream failover');
    expect(h.sim.requests.map((r) => r.apiKey)).toEqual(['key-gem-a', 'key-gem-b']);
    await expect.poll(async () => (await wallet(accountId)).held).toBe(0n);
  });

  it('does not retry a 4xx and passes upstream errors through in the generate-content shape', async () => {
    const { accountId, ai } = await client();
    h.sim.enqueue('http_400');
    const bad = await ai.models.generateContent({ model: 'gem-model', contents: 'bad' }).catch((e) => e);
    expect(bad).toBeInstanceOf(ApiError);
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.message)).toEqual({ error: { code: 400, message: 'Request contains an invalid argument.', status: 'UNAVAILABLE' } });
    expect(h.sim.requests).toHaveLength(1);

    h.sim.reset();
    h.sim.enqueue('http_503', 'http_500');
    const down = await ai.models.generateContent({ model: 'gem-model', contents: 'down' }).catch((e) => e);
    expect(down).toBeInstanceOf(ApiError);
    // The last upstream status passes through (never rewritten to 502), in Google's shape.
    expect(down.status).toBe(500);
    const body = JSON.parse(down.message);
    expect(body.error).toMatchObject({ code: 500, status: 'UNAVAILABLE' });
    expect(body.error.message).toMatch(/internal error/);
    expect(h.sim.requests.map((r) => r.apiKey)).toEqual(['key-gem-a', 'key-gem-b']);
    expect(await balance(accountId)).toBe(GRANT);
    expect((await wallet(accountId)).held).toBe(0n);
  });

  it('refuses with 402 RESOURCE_EXHAUSTED and no upstream call when the estimate exceeds the balance', async () => {
    const { accountId, ai } = await client();
    // 40.44 USD at $2 per 1M output tokens is 20.22M tokens.
    const error = await ai.models.generateContent({ model: 'gem-model', contents: 'x', config: { maxOutputTokens: 30_000_000 } }).catch((e) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect(error.status).toBe(402);
    expect(JSON.parse(error.message).error).toMatchObject({ code: 402, status: 'RESOURCE_EXHAUSTED' });
    expect(h.sim.requests).toHaveLength(0);
    expect(await balance(accountId)).toBe(GRANT);
  });

  it('settles an interrupted stream as interrupted, on what was delivered', async () => {
    const { accountId, ai } = await client();
    h.sim.enqueue('cut_stream_after:2');
    const stream = await ai.models.generateContentStream({ model: 'gem-model', contents: 'a b c d e f g h' });
    let text = '';
    let finish: string | undefined;
    const failure = await (async () => {
      for await (const chunk of stream) {
        text += chunk.text ?? '';
        finish = chunk.candidates?.[0]?.finishReason ?? finish;
      }
    })().catch((e) => e);
    expect(failure).toBeUndefined(); // the SDK ends quietly: the client sees early termination
    expect(text).toBe('Echo: a ');
    expect(finish).toBeUndefined();
    await expect.poll(async () => (await wallet(accountId)).held).toBe(0n);
    const settled = (await lastSettlement(accountId))!;
    expect(settled.call.status).toBe('interrupted');
    expect(settled.call.input_tokens).toBe(forwardedPrompt());
    // The partial usageMetadata counted no output: it is estimated from the delivered characters.
    expect(settled.call.output_tokens).toBe(Math.ceil('Echo: a '.length / 4));
    expect(BigInt(settled.captured)).toBe(expectedCost(forwardedPrompt(), 0, settled.call.output_tokens));
  });

  it('ends a stream whose upstream sent an in-stream error early, settled as interrupted', async () => {
    const { accountId, ai } = await client();
    h.sim.enqueue('error_frame_after:2');
    const stream = await ai.models.generateContentStream({ model: 'gem-model', contents: 'a b c d e f g h' });
    let text = '';
    let finish: string | undefined;
    const failure = await (async () => {
      for await (const chunk of stream) {
        text += chunk.text ?? '';
        finish = chunk.candidates?.[0]?.finishReason ?? finish;
      }
    })().catch((e) => e);
    // Google's bare error object (outside the SSE framing) is what @google/genai turns into
    // ApiError 503, when it arrives as a network read of its own. The relay's SSE parser drops
    // it today, so the client sees a quiet early end; once it is forwarded, the SDK throws.
    if (failure !== undefined) {
      expect(failure).toBeInstanceOf(ApiError);
      expect(failure.status).toBe(503);
    }
    expect(text).toBe('Echo: a ');
    expect(finish).toBeUndefined();
    await expect.poll(async () => (await wallet(accountId)).held).toBe(0n);
    expect((await lastSettlement(accountId))?.call.status).toBe('interrupted');
  });
});

describe('generate-content over raw HTTP', () => {
  it('streams one JSON array without alt=sse, authenticated with ?key=', async () => {
    const { accountId, key } = await client();
    const body = { contents: userText('one two three') };
    const response = await post(`/v1beta/models/gem-model:streamGenerateContent?key=${encodeURIComponent(key)}`, body, {});
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    const raw = await response.text();
    expect(raw.startsWith('[')).toBe(true);
    expect(raw.endsWith(']')).toBe(true);
    const elements = JSON.parse(raw) as Array<{ candidates: Array<{ content: { parts: Array<{ text: string }> }; finishReason?: string }>; usageMetadata?: unknown }>;
    expect(elements).toHaveLength(4);
    expect(elements.map((e) => e.candidates[0]!.content.parts[0]!.text).join('')).toBe('Echo: one two three');
    expect(elements.at(-1)!.candidates[0]!.finishReason).toBe('STOP');
    // Upstream is always asked for SSE; the key is the channel's, never the caller's.
    const forwarded = h.sim.requests.at(-1)!;
    expect(forwarded.query).toEqual({ alt: 'sse' });
    expect(forwarded.apiKey).toBe('key-gem-a');
    await expect.poll(async () => (await wallet(accountId)).held).toBe(0n);
    expect(await balance(accountId)).toBe(GRANT - expectedCost(promptTokens('generate-content', body), 0, countTokens('Echo: one two three')));
  });

  it('leaves the JSON array open when the stream is cut', async () => {
    const { accountId, key } = await client();
    h.sim.enqueue('cut_stream_after:2');
    const response = await post('/v1beta/models/gem-model:streamGenerateContent', { contents: userText('a b c d e f') }, { 'x-goog-api-key': key });
    expect(response.status).toBe(200);
    const raw = await response.text();
    expect(raw.startsWith('[')).toBe(true);
    expect(raw.endsWith(']')).toBe(false);
    expect(() => JSON.parse(raw)).toThrow();
    expect(JSON.parse(`${raw}]`)).toHaveLength(2);
    await expect.poll(async () => (await wallet(accountId)).held).toBe(0n);
    expect((await lastSettlement(accountId))?.call.status).toBe('interrupted');
  });

  it('ends the JSON array of a stream whose upstream sent an in-stream error, settled as interrupted', async () => {
    const { accountId, key } = await client();
    h.sim.enqueue('error_frame_after:2');
    const response = await post('/v1beta/models/gem-model:streamGenerateContent', { contents: userText('a b c d e f') }, { 'x-goog-api-key': key });
    expect(response.status).toBe(200);
    const raw = await response.text();
    // Either cut (the error dropped) or closed with the error object as its last element.
    const elements = JSON.parse(raw.endsWith(']') ? raw : `${raw}]`) as Array<{ error?: unknown; candidates?: Array<{ finishReason?: string }> }>;
    expect(elements.slice(0, 2).every((e) => e.candidates && !e.candidates[0]!.finishReason)).toBe(true);
    if (elements.length > 2) expect(elements).toEqual([...elements.slice(0, 2), { error: { code: 503, message: expect.any(String), status: 'UNAVAILABLE' } }]);
    await expect.poll(async () => (await wallet(accountId)).held).toBe(0n);
    expect((await lastSettlement(accountId))?.call.status).toBe('interrupted');
  });

  it('answers errors in the generate-content shape', async () => {
    const { key } = await client({ allowed_models: ['gem-model', 'chat-model'] });
    const auth = { 'x-goog-api-key': key };

    const empty = await post('/v1beta/models/gem-model:generateContent', { contents: [] }, auth);
    expect(empty.status).toBe(400);
    expect(await errorOf(empty)).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT', message: expect.stringMatching(/contents/) });

    const noParts = await post('/v1beta/models/gem-model:generateContent', { contents: [{ role: 'user' }] }, auth);
    expect(noParts.status).toBe(400);
    expect(await errorOf(noParts)).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT' });

    const unknown = await post('/v1beta/models/nope:generateContent', { contents: userText('x') }, auth);
    expect(unknown.status).toBe(400);
    expect(await errorOf(unknown)).toMatchObject({ code: 400, status: 'NOT_FOUND' });

    const notAllowed = await post('/v1beta/models/resp-model:generateContent', { contents: userText('x') }, auth);
    expect(notAllowed.status).toBe(400);
    expect(await errorOf(notAllowed)).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT' });

    // chat-model exists but has no generate-content channel.
    const noChannel = await post('/v1beta/models/chat-model:generateContent', { contents: userText('x') }, auth);
    expect(noChannel.status).toBe(503);
    expect(await errorOf(noChannel)).toMatchObject({ code: 503, status: 'UNAVAILABLE' });

    // googleSearch is the built-in web_search, which no gem channel offers.
    const search = await post('/v1beta/models/gem-model:generateContent', { contents: userText('x'), tools: [{ googleSearch: {} }] }, auth);
    expect(search.status).toBe(400);
    expect(await errorOf(search)).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT', message: expect.stringMatching(/web_search/) });

    const noKey = await post('/v1beta/models/gem-model:generateContent', { contents: userText('x') }, {});
    expect(noKey.status).toBe(401);
    expect(await errorOf(noKey)).toMatchObject({ code: 401, status: 'UNAUTHENTICATED' });

    expect(h.sim.requests).toHaveLength(0);
  });

  it('answers a 402 with code 402 and status RESOURCE_EXHAUSTED', async () => {
    const { key } = await client();
    const response = await post(
      '/v1beta/models/gem-model:streamGenerateContent?alt=sse',
      { contents: userText('x'), generationConfig: { maxOutputTokens: 30_000_000 } },
      { 'x-goog-api-key': key },
    );
    expect(response.status).toBe(402);
    expect(await response.json()).toEqual({ error: { code: 402, message: expect.any(String), status: 'RESOURCE_EXHAUSTED' } });
    expect(h.sim.requests).toHaveLength(0);
  });

  it('answers a model name whose percent-encoding is broken once decoded as an unknown model, never a 500', async () => {
    const { key } = await client();
    const auth = { 'x-goog-api-key': key };
    // `%25` is `%`: the path's model is `a%ZZ`, which no second decoding may choke on.
    for (const action of ['generateContent', 'streamGenerateContent', 'countTokens']) {
      const response = await post(`/v1beta/models/a%25ZZ:${action}`, { contents: userText('x') }, auth);
      expect(response.status, action).toBe(400);
      expect(await errorOf(response)).toMatchObject({ code: 400, status: 'NOT_FOUND' });
    }
    expect(h.sim.requests).toHaveLength(0);
  });
});
