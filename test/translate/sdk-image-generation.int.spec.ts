/**
 * The built-in image tool on chat-completions (spec, built-in tool rules 1-2 and streaming error
 * rule 3): a streamed chat request with `{type: image_generation}` for a model whose responses
 * channel in group X1 offers the tool is translated to that channel, the image comes back as
 * markdown in `delta.content`, and each image is billed at the model's `per_image` price; every
 * other model keeps 400 tool_not_supported.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChannelConfig, GatewayConfig } from '../../src/config/schema';
import { parseUsd } from '../../src/money/usd';
import type { Simulator } from '../../src/simulator';
import { PNG_BASE64 } from '../../src/simulator/protocols/images';
import { countTokens, promptTokens } from '../../src/simulator/tokens';
import { simulatorChannel } from '../support/channels';
import { startSimulatedGateway, type SimulatedGateway } from '../support/gateway';

const PRICE = { input: '1.00', cached_input: '0.50', output: '2.00', per_image: '0.04' };
const PER_IMAGE = parseUsd(PRICE.per_image);

function config(sim: Simulator): GatewayConfig {
  const model = (id: string) => ({ id, owned_by: 'test', kind: 'text' as const, aliases: [], callable: true, endpoint_type: null, default_max_tokens: 1000, capabilities: [], price: PRICE });
  const channel = (id: string, protocol: 'chat-completions' | 'responses', models: string[], extra: Partial<ChannelConfig> = {}) =>
    simulatorChannel(sim, id, protocol, models, { tools: ['web_search'], ...extra });
  return {
    models: ['newest', 'older', 'chat-only'].map(model),
    channels: [
      // As in the demo config: the newest family has a native chat channel without the image tool…
      channel('chat', 'chat-completions', ['newest', 'older', 'chat-only'], { translation: false }),
      // …and a responses channel in group X1 that offers it and translates for chat clients.
      channel('x1-newest', 'responses', ['newest'], { group: 'X1', tools: ['web_search', 'image_generation'], translation: ['chat-completions'] }),
      channel('x1-older', 'responses', ['older'], { group: 'X1', translation: ['chat-completions'] }),
    ],
  };
}

let h: SimulatedGateway;
beforeAll(async () => {
  h = await startSimulatedGateway(config, { chatTimeoutMs: 5000 });
});
afterAll(() => h.close());

interface Wire {
  readonly status: number;
  readonly headers: Headers;
  /** The `data:` payloads in order, `[DONE]` included. */
  readonly frames: string[];
}

async function chat(key: string, body: Record<string, unknown>): Promise<Wire> {
  const response = await fetch(`${h.baseUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  const frames = response.headers.get('content-type')?.startsWith('text/event-stream')
    ? text
        .split('\n\n')
        .filter((f) => f.startsWith('data: '))
        .map((f) => f.slice('data: '.length))
    : [text];
  return { status: response.status, headers: response.headers, frames };
}

const contentOf = (frames: string[]) =>
  frames
    .filter((f) => f !== '[DONE]')
    .map((f) => JSON.parse(f) as { choices?: { delta?: { content?: string } }[] })
    .map((c) => c.choices?.[0]?.delta?.content ?? '')
    .join('');

const IMAGE_MD = `![image](data:image/png;base64,${PNG_BASE64})`;

async function walletEvents(accountId: string) {
  await h.t.gateway.ledger.idle();
  return h.t.gateway.storage.store.readStream(`wallet-${accountId}`);
}

async function settled(accountId: string) {
  await expect.poll(async () => (await walletEvents(accountId)).filter((e) => e.type === 'HoldSettled').length).toBe(1);
  const events = await walletEvents(accountId);
  const reserved = events.find((e) => e.type === 'FundsReserved')!.data as { amount: bigint };
  const settlement = events.find((e) => e.type === 'HoldSettled')!.data as { captured: bigint; call: { status: string; input_tokens: number; output_tokens: number; unit_count: number | null; unit_type: string | null } };
  return { hold: BigInt(reserved.amount), captured: BigInt(settlement.captured), call: settlement.call };
}

/** What the tokens of a call cost at PRICE (per 1M tokens, rounded up once). */
const tokenCost = (input: number, output: number) => {
  const scaled = BigInt(input) * parseUsd(PRICE.input) + BigInt(output) * parseUsd(PRICE.output);
  return (scaled + 999_999n) / 1_000_000n;
};

describe('image_generation on chat-completions, for the model whose X1 responses channel offers it', () => {
  it('streams the image as markdown in delta.content through the responses channel, billed per image', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const wire = await chat(key, {
      model: 'newest',
      stream: true,
      stream_options: { include_usage: true },
      tools: [{ type: 'image_generation', size: '1024x1024' }],
      messages: [{ role: 'user', content: 'draw a red fox' }],
    });
    expect(wire.status).toBe(200);
    expect(wire.headers.get('x-protocol-translation')).toBe('chat-completions->responses');
    expect(wire.headers.get('x-protocol-warning')).toBeNull();
    // The image is one chunk of its own, apart from the text by a blank line.
    expect(contentOf(wire.frames)).toBe(`${IMAGE_MD}\n\nEcho: draw a red fox`);
    expect(wire.frames.some((f) => f !== '[DONE]' && JSON.parse(f).choices?.[0]?.delta?.content === IMAGE_MD)).toBe(true);
    expect(wire.frames.at(-1)).toBe('[DONE]');

    const upstream = h.sim.requests.at(-1)!;
    expect(upstream.path).toBe('/x1-newest/v1/responses');
    expect(upstream.stream).toBe(true);
    expect((upstream.body as { tools: unknown }).tools).toEqual([{ type: 'image_generation', size: '1024x1024' }]);

    const { hold, captured, call } = await settled(accountId);
    const input = promptTokens('responses', upstream.body);
    const output = countTokens('Echo: draw a red fox');
    expect([call.status, call.input_tokens, call.output_tokens, call.unit_count, call.unit_type]).toEqual(['success', input, output, 1, 'image']);
    expect(captured).toBe(tokenCost(input, output) + PER_IMAGE);
    // The hold covers one image on top of the tokens' worst case.
    expect(hold).toBeGreaterThanOrEqual(PER_IMAGE + tokenCost(0, 1000));
  });

  it('bills every image the upstream made', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const wire = await chat(key, { model: 'newest', stream: true, tools: [{ type: 'image_generation' }], messages: [{ role: 'user', content: 'draw a fox, then draw a hen' }] });
    expect(contentOf(wire.frames)).toBe(`${IMAGE_MD}\n\n${IMAGE_MD}\n\nEcho: draw a fox, then draw a hen`);
    const { captured, call } = await settled(accountId);
    expect(call.unit_count).toBe(2);
    expect(captured).toBe(tokenCost(call.input_tokens, call.output_tokens) + 2n * PER_IMAGE);
  });

  it('reads back with the OpenAI SDK as assistant content', async () => {
    const { key } = await h.t.accountWithKey();
    const openai = new OpenAI({ apiKey: key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
    const completion = await openai.chat.completions
      .stream({ model: 'newest', tools: [{ type: 'image_generation' } as never], messages: [{ role: 'user', content: 'please draw' }] })
      .finalChatCompletion();
    expect(completion.choices[0]!.message.content).toBe(`${IMAGE_MD}\n\nEcho: please draw`);
    expect(completion.choices[0]!.finish_reason).toBe('stop');
  });

  it('still bills an image the client received when the stream is cut before its end', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    // Frames: created, in_progress, the image item's added / in_progress / generating / completed / done: 7.
    h.sim.enqueue('cut_stream_after:7');
    const wire = await chat(key, { model: 'newest', stream: true, tools: [{ type: 'image_generation' }], messages: [{ role: 'user', content: 'draw a cat' }] });
    expect(contentOf(wire.frames)).toBe(IMAGE_MD);
    const { captured, call } = await settled(accountId);
    expect(call.status).toBe('interrupted');
    expect(call.unit_count).toBe(1);
    expect(captured).toBeGreaterThanOrEqual(PER_IMAGE);
  });

  it.each([
    ['cut', 'cut_stream_after:4'],
    ['error frame', 'error_frame_after:4'],
  ])('ends a failed stream (%s) with an api_error / upstream_error chunk, then [DONE] (rule 3)', async (_kind, scenario) => {
    const { key } = await h.t.accountWithKey();
    h.sim.enqueue(scenario as 'cut_stream_after:4');
    const wire = await chat(key, { model: 'newest', stream: true, tools: [{ type: 'image_generation' }], messages: [{ role: 'user', content: 'draw a cat' }] });
    expect(wire.status).toBe(200);
    expect(wire.frames.at(-1)).toBe('[DONE]');
    expect(JSON.parse(wire.frames.at(-2)!)).toEqual({ error: { message: expect.any(String), type: 'api_error', code: 'upstream_error' } });
  });

  it('requires stream: true (rule 1)', async () => {
    const { key } = await h.t.accountWithKey();
    const wire = await chat(key, { model: 'newest', tools: [{ type: 'image_generation' }], messages: [{ role: 'user', content: 'draw' }] });
    expect(wire.status).toBe(400);
    expect(JSON.parse(wire.frames[0]!)).toMatchObject({ error: { code: 'invalid_request', message: expect.stringContaining('stream') } });
  });
});

describe('image_generation on chat-completions for any other model (rule 2)', () => {
  it.each(['older', 'chat-only'])('refuses %s with 400 tool_not_supported, nothing sent upstream', async (model) => {
    const { key } = await h.t.accountWithKey();
    const before = h.sim.requests.length;
    const wire = await chat(key, { model, stream: true, tools: [{ type: 'image_generation' }], messages: [{ role: 'user', content: 'draw' }] });
    expect(wire.status).toBe(400);
    expect(JSON.parse(wire.frames[0]!)).toMatchObject({ error: { code: 'tool_not_supported', message: expect.stringContaining('image_generation') } });
    expect(h.sim.requests.length).toBe(before);
  });

  it('names the tool no channel can run, or the pair no one channel runs together', async () => {
    const { key } = await h.t.accountWithKey();
    const refusal = async (model: string, tools: string[]) =>
      JSON.parse((await chat(key, { model, stream: true, tools: tools.map((type) => ({ type })), messages: [{ role: 'user', content: 'draw' }] })).frames[0]!).error;
    expect(await refusal('older', ['web_search', 'image_generation'])).toMatchObject({ code: 'tool_not_supported', message: expect.stringMatching(/^The built-in tool `image_generation` is/) });
    // web_search runs natively, image_generation only by translation, which does not carry web_search.
    expect(await refusal('newest', ['web_search', 'image_generation'])).toMatchObject({
      code: 'tool_not_supported',
      message: expect.stringMatching(/^The built-in tools `web_search` and `image_generation` together are/),
    });
  });

  it('keeps web_search on the native channel that lists it', async () => {
    const { key } = await h.t.accountWithKey();
    const wire = await chat(key, { model: 'newest', stream: true, tools: [{ type: 'web_search' }], messages: [{ role: 'user', content: 'search' }] });
    expect(wire.status).toBe(200);
    expect(wire.headers.get('x-protocol-translation')).toBeNull();
    expect(h.sim.requests.at(-1)!.path).toBe('/chat/v1/chat/completions');
  });
});

describe('image_generation on the responses endpoint (native)', () => {
  it('bills the images of a non-streamed answer', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const openai = new OpenAI({ apiKey: key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
    const response = await openai.responses.create({ model: 'newest', input: [{ role: 'user', content: 'draw a fox' }], tools: [{ type: 'image_generation' }] });
    expect(response.output.find((o) => o.type === 'image_generation_call')).toMatchObject({ result: PNG_BASE64 });
    const { captured, call } = await settled(accountId);
    expect(call.unit_count).toBe(1);
    expect(captured).toBe(tokenCost(call.input_tokens, call.output_tokens) + PER_IMAGE);
  });
});
