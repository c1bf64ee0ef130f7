/**
 * Issue 31, items 2 and 7: what a chat call captures is bounded by what the request could cause and
 * by its hold, whatever its upstream says or sends; and its billing follows what happened. Driven
 * with the openai SDK against hand-written upstreams.
 */
import { createServer, type Server } from 'node:http';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROMPT_OVERHEAD_TOKENS } from '../../src/upstream/capture';
import { parseExposition } from '../support/prometheus';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { MODELS, ScriptedUpstream, scriptedConfig, TEXT, TRANSLATED_MODELS } from './scripted-upstream';

/** An upstream that streams chat-completions chunks without end until its client goes away. */
class EndlessStream {
  closedAt: number | null = null;
  sentChars = 0;
  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<EndlessStream> {
    let self: EndlessStream | undefined;
    const server = createServer((request, response) => {
      request.resume();
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunk = (content: string) => `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`;
      const piece = 'lorem ipsum dolor sit amet, '.repeat(4);
      const timer = setInterval(() => {
        // A few kilobytes a tick, as a runaway model would.
        for (let i = 0; i < 20; i++) {
          response.write(chunk(piece));
          self!.sentChars += piece.length;
        }
      }, 1);
      response.on('close', () => {
        clearInterval(timer);
        self!.closedAt = Date.now();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    self = new EndlessStream(server, `http://127.0.0.1:${(server.address() as { port: number }).port}`);
    return self;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

let upstream: ScriptedUpstream;
let endless: EndlessStream;
let t: TestGateway;
let base: string;

const BARE = 'bare-model';
const RUNAWAY = 'runaway-model';

beforeAll(async () => {
  upstream = await ScriptedUpstream.start();
  endless = await EndlessStream.start();
  const config = scriptedConfig(upstream.url);
  // A model as the issue found it: no context_window, no default_max_tokens; dear prices.
  const bare = { ...config.models[0]!, id: BARE, context_window: undefined, default_max_tokens: undefined, price: { input: '1000', output: '1000' } };
  delete (bare as { context_window?: number }).context_window;
  delete (bare as { default_max_tokens?: number }).default_max_tokens;
  const runaway = { ...config.models[0]!, id: RUNAWAY };
  const channel = (id: string, url: string, model: string) => ({ ...config.channels[0]!, id, base_url: url, models: [model], translation: true });
  config.models.push(bare as never, runaway);
  config.channels.push(channel('bare-channel', `${upstream.url}/bare`, BARE), channel('runaway-channel', endless.url, RUNAWAY));
  t = await startTestGateway({ config, chatTimeoutMs: 10_000 });
  await t.gateway.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(t.gateway.app.server.address() as { port: number }).port}`;
});
afterAll(async () => {
  await t.close();
  await upstream.close();
  await endless.close();
});

interface Ended {
  type: string;
  data: { hold_amount?: string; amount?: string; captured?: string; uncharged?: string; call?: Record<string, unknown> };
}

/** How the account's one call ended, once its hold is closed. */
async function ending(accountId: string): Promise<Ended> {
  await t.gateway.ledger.idle();
  await expect.poll(async () => (await t.gateway.ledger.wallet(accountId)).held, { timeout: 5000 }).toBe(0n);
  const events = await t.gateway.storage.store.readStream(`wallet-${accountId}`);
  const ends = events.filter((e) => e.type === 'HoldSettled' || e.type === 'HoldReleased');
  expect(ends).toHaveLength(1);
  return ends[0] as unknown as Ended;
}

const openai = (key: string) => new OpenAI({ apiKey: key, baseURL: `${base}/v1`, maxRetries: 0 });
const completion = (usage: object | null, extra: object = {}) =>
  JSON.stringify({ id: 'c1', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: TEXT }, finish_reason: 'stop' }], usage, ...extra });

describe('a charge is bounded by its hold (item 2)', () => {
  it('prompt_tokens 19999999 on a model without context_window or default_max_tokens: input clamped to the request, within 4 × the hold', async () => {
    const { accountId, key } = await t.accountWithKey();
    await t.admin('POST', `/accounts/${accountId}/topups`, { amount_usd: '200', reference: 'bare' });
    upstream.answer({ contentType: 'application/json', body: completion({ prompt_tokens: 19_999_999, completion_tokens: 3, total_tokens: 20_000_002 }) });
    const answer = await openai(key).chat.completions.create({ model: BARE, messages: [{ role: 'user', content: 'hi' }] });
    expect(answer.choices[0]!.message.content).toBe(TEXT);

    const settled = await ending(accountId);
    expect(settled.type).toBe('HoldSettled');
    const hold = BigInt(settled.data.hold_amount!);
    const captured = BigInt(settled.data.captured!);
    expect(captured).toBeLessThanOrEqual(4n * hold);
    // The input billed is at most the request's bytes (one token a byte) and the template's allowance, not the 19,999,999 reported.
    const bodyBytes = Buffer.byteLength(JSON.stringify({ model: BARE, messages: [{ role: 'user', content: 'hi' }] }));
    expect(settled.data.call!.input_tokens).toBeLessThanOrEqual(bodyBytes + PROMPT_OVERHEAD_TOKENS);
    expect((await t.gateway.ledger.wallet(accountId)).balance).toBeGreaterThan(0n);
  });

  it('completion_tokens far above max_tokens (the 297× capture): output billed at max_tokens, the rest recorded, never charged', async () => {
    const { accountId, key } = await t.accountWithKey();
    // Within the old plausibility check (2 × allowance + 32,768), so believed as reported before.
    upstream.answer({ contentType: 'application/json', body: completion({ prompt_tokens: 9, completion_tokens: 30_000, total_tokens: 30_009 }) });
    const answer = await openai(key).chat.completions.create({ model: MODELS['chat-completions'], messages: [{ role: 'user', content: 'hi' }], max_tokens: 100 });
    expect(answer.choices[0]!.message.content).toBe(TEXT);

    const settled = await ending(accountId);
    expect(settled.data.call).toMatchObject({ status: 'success', output_tokens: 100 });
    expect(BigInt(settled.data.captured!)).toBeLessThanOrEqual(4n * BigInt(settled.data.hold_amount!));
  });

  it('a price beyond 4 × the hold is not charged: HoldSettled.uncharged and gateway_uncharged_usd_total say what was left out', async () => {
    const { accountId, key } = await t.accountWithKey();
    await t.admin('POST', `/accounts/${accountId}/topups`, { amount_usd: '200', reference: 'bound' });
    // Eight images on a short prompt with max_tokens 1: the prompt is believed (8 × 8,192 allowed), the price is not.
    const images = Array.from({ length: 8 }, () => ({ type: 'image_url' as const, image_url: { url: 'https://example.com/a.png' } }));
    upstream.answer({ contentType: 'application/json', body: completion({ prompt_tokens: 60_000, completion_tokens: 1, total_tokens: 60_001 }) });
    await openai(key).chat.completions.create({ model: BARE, messages: [{ role: 'user', content: images }], max_tokens: 1 });

    const settled = await ending(accountId);
    const hold = BigInt(settled.data.hold_amount!);
    expect(BigInt(settled.data.captured!)).toBe(4n * hold);
    expect(BigInt(settled.data.uncharged!)).toBeGreaterThan(0n);
    const scrape = parseExposition(await (await fetch(`${base}/metrics`)).text());
    expect(scrape.find((s) => s.name === 'gateway_uncharged_usd_total' && s.labels.model === BARE)?.value).toBeGreaterThan(0);
    expect(scrape.find((s) => s.name === 'gateway_capped_captures_total' && s.labels.model === BARE)?.value).toBeGreaterThanOrEqual(1);
  });

  it('a stream with max_tokens 100 whose upstream keeps sending: cut, ended as a length stop, the upstream closed, billed at most 100 tokens', async () => {
    const { accountId, key } = await t.accountWithKey();
    const stream = await openai(key).chat.completions.create({ model: RUNAWAY, messages: [{ role: 'user', content: 'hi' }], max_tokens: 100, stream: true });
    let text = '';
    let finish: string | null = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(finish).toBe('length');
    // Generous to a well-behaved upstream (16 characters a token), nothing like the runaway's.
    expect(text.length).toBeGreaterThan(100);
    expect(text.length).toBeLessThanOrEqual(100 * 16);
    await expect.poll(() => endless.closedAt, { timeout: 5000 }).not.toBeNull();

    const settled = await ending(accountId);
    expect(settled.data.call).toMatchObject({ status: 'success', error_code: 'upstream_output_cut' });
    expect(settled.data.call!.output_tokens).toBeLessThanOrEqual(100);
    expect(BigInt(settled.data.captured!)).toBeLessThanOrEqual(BigInt(settled.data.hold_amount!));
  });

  it('a translated stream is cut in the client protocol: stop_reason max_tokens', async () => {
    // A messages client on the runaway chat-completions channel, through translation.
    const { key } = await t.accountWithKey();
    const client = new Anthropic({ apiKey: key, baseURL: base, maxRetries: 0 });
    const stream = client.messages.stream({ model: RUNAWAY, max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] });
    const message = await stream.finalMessage();
    expect(message.stop_reason).toBe('max_tokens');
  });
});

describe('billing that follows what happened (item 7)', () => {
  it('(a) a 200 whose body is not JSON is a failed attempt: 502 in the protocol shape, the hold released, the row an error', async () => {
    const { accountId, key } = await t.accountWithKey();
    upstream.answer({ contentType: 'application/json', body: '{"id": "c1", "choices": [' });
    const error = await openai(key)
      .chat.completions.create({ model: MODELS['chat-completions'], messages: [{ role: 'user', content: 'hi' }], max_tokens: 100 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(502);
    const released = await ending(accountId);
    expect(released.type).toBe('HoldReleased');
    expect(released.data.call).toMatchObject({ status: 'error', error_code: 'upstream_unreachable' });
  });

  it('(a) translated: the messages client gets a 502 error, not an empty 200, and nothing is billed', async () => {
    const { accountId, key } = await t.accountWithKey();
    upstream.answer({ contentType: 'application/json', body: 'upstream says hello' });
    const client = new Anthropic({ apiKey: key, baseURL: base, maxRetries: 0 });
    const error = await client.messages.create({ model: TRANSLATED_MODELS['chat-completions'], max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Anthropic.APIError);
    expect((error as InstanceType<typeof Anthropic.APIError>).status).toBe(502);
    expect((await ending(accountId)).type).toBe('HoldReleased');
  });

  it('(b) without usage, the output is estimated from the delivered text, not from the JSON around it', async () => {
    const { accountId, key } = await t.accountWithKey();
    upstream.answer({ contentType: 'application/json', body: completion(null, { system_fingerprint: 'fp_'.repeat(100) }) });
    const answer = await openai(key).chat.completions.create({ model: MODELS['chat-completions'], messages: [{ role: 'user', content: 'hi' }], max_tokens: 100 });
    expect(answer.choices[0]!.message.content).toBe(TEXT);
    const settled = await ending(accountId);
    // "hello there": 11 characters, 3 tokens at 4 characters a token.
    expect(settled.data.call!.output_tokens).toBe(Math.ceil(TEXT.length / 4));
  });
});
