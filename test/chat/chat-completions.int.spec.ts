import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Ledger } from '../../src/commands/ledger';
import { available } from '../../src/commands/wallet/state';
import { createPostgresEventStore } from '../../src/events/store/postgres';
import { KeyCipher } from '../../src/secrets/api-key';
import { KeyVault } from '../../src/secrets/key-vault';
import { promptTokens } from '../../src/simulator';
import { parseUsd } from '../../src/money/usd';
import { expectedCost, startChatHarness, type ChatHarness } from './support';

let h: ChatHarness;
beforeAll(async () => {
  h = await startChatHarness({ chatTimeoutMs: 3000 });
});
afterAll(() => h.close());
beforeEach(() => h.sim.reset());

async function client(keyFields: Record<string, unknown> = {}) {
  const { accountId, key, keyId } = await h.t.accountWithKey(keyFields);
  return { accountId, keyId, openai: new OpenAI({ apiKey: key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 }) };
}

const balance = async (accountId: string) => (await h.t.gateway.ledger.wallet(accountId)).balance;

describe('POST /v1/chat/completions with the openai SDK', () => {
  it('answers non-streaming and settles exactly on the reported usage', async () => {
    const { accountId, openai } = await client();
    const messages = [
      { role: 'system' as const, content: 'Be brief [cache]' },
      { role: 'user' as const, content: 'Hello there' },
    ];
    const completion = await openai.chat.completions.create({ model: 'chat-model', messages });
    expect(completion.object).toBe('chat.completion');
    expect(completion.choices[0]!.message.content).toBe('Echo: Hello there');
    const u = completion.usage!;
    expect(u.prompt_tokens).toBe(promptTokens('chat-completions', { messages }));
    expect(u.prompt_tokens_details?.cached_tokens).toBeGreaterThan(0);
    const forwarded = h.sim.requests.at(-1)!;
    expect(forwarded.model).toBe('chat-model-upstream');
    expect(forwarded.apiKey).toBe('key-cc-a');
    const cost = expectedCost(u.prompt_tokens, u.prompt_tokens_details!.cached_tokens!, u.completion_tokens);
    expect(await balance(accountId)).toBe(parseUsd('40.44') - cost);
    const wallet = await h.t.gateway.ledger.wallet(accountId);
    expect(wallet.held).toBe(0n);
  });

  it('streams chunks and settles on the usage chunk, hiding it when not asked for', async () => {
    const { accountId, openai } = await client();
    const stream = await openai.chat.completions.create({ model: 'chat-model-2024', messages: [{ role: 'user', content: 'one two three' }], stream: true });
    let text = '';
    let sawUsage = false;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      if (chunk.usage) sawUsage = true;
    }
    expect(text).toBe('Echo: one two three');
    expect(sawUsage).toBe(false);
    const prompt = promptTokens('chat-completions', { messages: [{ role: 'user', content: 'one two three' }] });
    const output = Math.ceil(Buffer.byteLength('Echo: one two three') / 4);
    // The client's stream ends before the settlement is written: wait for it.
    await expect.poll(() => balance(accountId)).toBe(parseUsd('40.44') - expectedCost(prompt, 0, output));

    const withUsage = await openai.chat.completions.create({
      model: 'chat-model',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let usageChunk = null;
    for await (const chunk of withUsage) if (chunk.usage) usageChunk = chunk.usage;
    expect(usageChunk).toMatchObject({ prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number) });
  });

  it('refuses with 402 and no upstream call when the estimate exceeds the balance', async () => {
    const { openai } = await client();
    // 40.44 USD at $2 per 1M output tokens is 20.22M tokens.
    const error = await openai.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'x' }], max_tokens: 30_000_000 }).catch((e) => e);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(error.status).toBe(402);
    expect(error.error).toMatchObject({ code: 'quota_exceeded', type: 'insufficient_quota' });
    expect(h.sim.requests).toHaveLength(0);
  });

  it('fails over on 5xx and connection reset, never retries 4xx, and passes 5xx through', async () => {
    const { accountId, openai } = await client();
    h.sim.enqueue('http_500');
    const ok = await openai.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'failover' }] });
    expect(ok.choices[0]!.message.content).toBe('Echo: failover');
    expect(h.sim.requests.map((r) => r.apiKey)).toEqual(['key-cc-a', 'key-cc-b']);

    h.sim.reset();
    h.sim.enqueue('http_400');
    const bad = await openai.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'bad' }] }).catch((e) => e);
    expect(bad.status).toBe(400);
    expect(bad.error).toMatchObject({ code: 'invalid_request', type: 'invalid_request_error' });
    expect(h.sim.requests).toHaveLength(1);

    h.sim.reset();
    h.sim.enqueue('http_503', 'reset_connection', 'http_502');
    const down = await openai.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'down' }] }).catch((e) => e);
    expect(down.status).toBe(502);
    expect(down.error).toMatchObject({ code: 'upstream_error', type: 'api_error' });
    expect(h.sim.requests).toHaveLength(3);
    const wallet = await h.t.gateway.ledger.wallet(accountId);
    expect(wallet.held).toBe(0n);
  });

  it('rejects unknown, placeholder, disallowed and media models, and models without a channel', async () => {
    const { openai } = await client({ allowed_models: ['chat-model', 'img-model', 'orphan-model'] });
    const status = async (model: string) =>
      openai.chat.completions.create({ model, messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect((await status('nope')).error).toMatchObject({ code: 'model_not_found' });
    expect((await status('placeholder')).error).toMatchObject({ code: 'model_not_found' });
    expect((await status('msg-model')).error).toMatchObject({ code: 'model_not_allowed' });
    const image = await status('img-model');
    expect(image.status).toBe(503);
    expect(image.error).toMatchObject({ code: 'no_channel_available' });
    expect((await status('orphan-model')).status).toBe(503);
    const invalid = await openai.chat.completions.create({ model: 'chat-model', messages: [] }).catch((e) => e);
    expect(invalid.status).toBe(400);
    expect(invalid.error).toMatchObject({ code: 'invalid_request' });
    const builtin = await openai.chat.completions
      .create({ model: 'chat-model', messages: [{ role: 'user', content: 'x' }], tools: [{ type: 'web_search' } as never] })
      .catch((e) => e);
    expect(builtin.status).toBe(400);
    expect(builtin.error.message).toMatch(/stream/);
  });

  it('settles an interrupted stream on what was delivered', async () => {
    const { accountId, openai } = await client();
    h.sim.enqueue('cut_stream_after:3');
    const stream = await openai.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'a b c d e f g h' }], stream: true });
    // The SDK ends quietly on a stream without [DONE]; the client sees early termination.
    let text = '';
    let finish: string | null = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(text.length).toBeGreaterThan(0);
    expect(finish).toBeNull();
    await expect.poll(async () => (await h.t.gateway.ledger.wallet(accountId)).held).toBe(0n);
    // Settlements are queued when the answer leaves and appended right after it.
    await h.t.gateway.ledger.idle();
    const events = await h.t.gateway.storage.store.readStream(`wallet-${accountId}`);
    const settled = events.find((e) => e.type === 'HoldSettled')!.data as { captured: string; call: { status: string; output_tokens: number } };
    expect(settled.call.status).toBe('interrupted');
    expect(settled.call.output_tokens).toBeGreaterThan(0);
    expect(BigInt(settled.captured)).toBeGreaterThan(0n);
  });

  it('never bills an answer whose body broke off after its 200: another channel answers, or a 502 costs nothing', async () => {
    const { accountId, openai } = await client();
    // The first channel sends its headers and half the body, then drops the connection.
    h.sim.enqueue('cut_stream_after:1');
    const ok = await openai.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'cut body' }] });
    expect(ok.choices[0]!.message.content).toBe('Echo: cut body');
    expect(h.sim.requests.map((r) => r.apiKey)).toEqual(['key-cc-a', 'key-cc-b']);
    const u = ok.usage!;
    await expect.poll(() => balance(accountId)).toBe(parseUsd('40.44') - expectedCost(u.prompt_tokens, 0, u.completion_tokens));

    h.sim.reset();
    const before = await balance(accountId);
    h.sim.enqueue('cut_stream_after:1', 'cut_stream_after:1', 'cut_stream_after:1');
    const broken = await openai.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'cut again' }] }).catch((e) => e);
    expect(broken.status).toBe(502);
    expect(broken.error).toMatchObject({ code: 'upstream_unreachable', type: 'api_error' });
    expect(h.sim.requests).toHaveLength(3);
    await h.t.gateway.ledger.idle();
    const wallet = await h.t.gateway.ledger.wallet(accountId);
    expect(wallet.balance).toBe(before);
    expect(wallet.held).toBe(0n);
    const events = await h.t.gateway.storage.store.readStream(`wallet-${accountId}`);
    const released = events.filter((e) => e.type === 'HoldReleased').at(-1)!.data as { call: { status: string; error_code: string; attempts_count: number } };
    expect(released.call).toMatchObject({ status: 'error', error_code: 'upstream_unreachable', attempts_count: 3 });
  });

  it('answers 502 when no channel can be reached and 504 when none answers in time, billing nothing', async () => {
    const { accountId, openai } = await client();
    h.sim.enqueue('reset_connection', 'reset_connection', 'reset_connection');
    const unreachable = await openai.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(unreachable.status).toBe(502);
    expect(unreachable.error).toMatchObject({ code: 'upstream_unreachable', type: 'api_error' });
    h.sim.enqueue('hang');
    const slow = await openai.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(slow.status).toBe(504);
    expect(slow.error).toMatchObject({ code: 'upstream_timeout', type: 'api_error' });
    const wallet = await h.t.gateway.ledger.wallet(accountId);
    expect(wallet.balance).toBe(parseUsd('40.44'));
    expect(wallet.held).toBe(0n);
  });

  it('doubles every price at or above the long-context threshold', async () => {
    const { accountId, openai } = await client();
    const short = [{ role: 'user' as const, content: 'short' }];
    const long = [{ role: 'user' as const, content: 'word '.repeat(200) }];
    const a = await openai.chat.completions.create({ model: 'long-model', messages: short });
    await expect.poll(() => balance(accountId)).toBe(parseUsd('40.44') - expectedCost(a.usage!.prompt_tokens, 0, a.usage!.completion_tokens));
    const before = await balance(accountId);
    const b = await openai.chat.completions.create({ model: 'long-model', messages: long });
    expect(b.usage!.prompt_tokens).toBeGreaterThanOrEqual(200);
    const single = expectedCost(b.usage!.prompt_tokens, 0, b.usage!.completion_tokens);
    // ceil(2x / 1000) computed on the exact amount: doubling the already-rounded single cost may differ by one unit.
    const doubled = before - (await balance(accountId));
    expect(doubled === single * 2n || doubled === single * 2n - 1n).toBe(true);
  });

  it('ends a failed built-in-tool stream with an error chunk and [DONE]', async () => {
    const { key } = await h.t.accountWithKey();
    h.sim.enqueue('cut_stream_after:2');
    const response = await fetch(`${h.baseUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'chat-model', stream: true, tools: [{ type: 'web_search' }], messages: [{ role: 'user', content: 'a b c d e' }] }),
    });
    expect(response.status).toBe(200);
    const text = await response.text();
    const frames = text.trim().split('\n\n');
    expect(frames.at(-1)).toBe('data: [DONE]');
    expect(JSON.parse(frames.at(-2)!.slice('data: '.length))).toEqual({
      error: { message: expect.any(String), type: 'api_error', code: 'upstream_error' },
    });
  });
});

describe('the hold decided before its commit', () => {
  it('stops the upstream request and answers 402 when the commit turns the decision over (another instance spent the wallet)', async () => {
    const { accountId, openai } = await client();
    await openai.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'warm up' }] });
    await h.t.gateway.ledger.idle();
    const settled = await balance(accountId);

    // Another instance on the same log holds all but 1,000 nano-USD: this one's cached wallet does not know.
    const elsewhere = new Ledger(createPostgresEventStore(h.t.db.sql), new KeyVault(h.t.db.sql, new KeyCipher('ab'.repeat(32))));
    const wallet = await elsewhere.wallet(accountId);
    const held = await elsewhere.reserve(accountId, { holdId: `elsewhere-${accountId}`, amount: available(wallet) - 1000n, keyId: null, spendCap: null, purpose: 'test', ttlSeconds: 60 });
    expect(held.ok).toBe(true);

    // The upstream would never answer: only the turned-over hold can end this call before its 3 s budget.
    const started = Date.now();
    const error = await openai.chat.completions
      .create({ model: 'chat-model', messages: [{ role: 'user', content: 'never answered [[sim:hang]]' }] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(402);
    expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe('quota_exceeded');
    // Stopped, not waited out: the hanging upstream request would have kept the answer for the whole 3 s budget.
    expect(Date.now() - started).toBeLessThan(2000);
    // The request had left on the early decision (it may or may not have reached the upstream)…
    expect(h.t.logs.some((line) => line.includes('hold refused at commit after an early decision'))).toBe(true);
    // …and nothing was charged or left held for it.
    const after = await h.t.gateway.ledger.wallet(accountId);
    expect(after.balance).toBe(settled);
    expect(after.held).toBe(available(wallet) - 1000n);
  });
});
