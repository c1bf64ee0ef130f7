import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import Anthropic from '@anthropic-ai/sdk';
import { countTokens, promptTokens, startSimulator, type Simulator } from '../../src/simulator';
import { anthropic, KEY, post, sseEvents } from './support';

let sim: Simulator;
let client: Anthropic;
beforeAll(async () => {
  sim = await startSimulator();
  client = anthropic(sim);
});
afterAll(() => sim.close());
beforeEach(() => sim.reset());

const tools: Anthropic.Tool[] = [
  { name: 'get_weather', description: 'weather', input_schema: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } } } },
  { name: 'get_time', input_schema: { type: 'object', properties: {} } },
];

describe('messages (@anthropic-ai/sdk)', () => {
  it('answers non-streaming with a text block and usage, receiving the key and version headers', async () => {
    const body = { model: 'claude-haiku-4-5-20251001', max_tokens: 100, system: 'be brief', messages: [{ role: 'user' as const, content: 'hello' }] };
    const msg = await client.messages.create(body);
    expect(msg).toMatchObject({ type: 'message', role: 'assistant', model: 'claude-haiku-4-5-20251001', stop_reason: 'end_turn', stop_sequence: null });
    expect(msg.content).toEqual([{ type: 'text', text: 'Echo: hello' }]);
    const prompt = promptTokens('messages', body);
    expect(prompt).toBe(Math.ceil(JSON.stringify({ system: body.system, messages: body.messages }).length / 4));
    expect(msg.usage).toMatchObject({ input_tokens: prompt, output_tokens: countTokens('Echo: hello'), cache_creation_input_tokens: 0, cache_read_input_tokens: 0 });
    const rec = sim.requests[0]!;
    // @anthropic-ai/sdk 1.x sends the key as `Authorization: Bearer`, not x-api-key
    expect(rec.apiKey).toBe(KEY);
    expect(rec.headers.authorization ?? rec.headers['x-api-key']).toMatch(new RegExp(`(Bearer )?${KEY}$`));
    expect(rec.headers['anthropic-version']).toBeDefined();
    expect(rec.model).toBe('claude-haiku-4-5-20251001');
  });

  it('streams the event sequence; the stream helper assembles the same message', async () => {
    const stream = await client.messages.create({ model: 'c', max_tokens: 100, messages: [{ role: 'user', content: 'one two' }], stream: true });
    const types: string[] = [];
    let text = '';
    let outputTokens = 0;
    for await (const e of stream) {
      types.push(e.type);
      if (e.type === 'content_block_delta' && e.delta.type === 'text_delta') text += e.delta.text;
      if (e.type === 'message_delta') outputTokens = e.usage.output_tokens;
    }
    expect(types).toEqual([
      'message_start',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect(text).toBe('Echo: one two');
    expect(outputTokens).toBe(countTokens(text));

    const final = await client.messages.stream({ model: 'c', max_tokens: 100, messages: [{ role: 'user', content: 'one two' }] }).finalMessage();
    expect(final.content).toEqual([{ type: 'text', text: 'Echo: one two' }]);
    expect(final.stop_reason).toBe('end_turn');

    const raw = await post(
      `${sim.url}/v1/messages`,
      { model: 'c', max_tokens: 10, stream: true, messages: [{ role: 'user', content: 'hi' }] },
      { 'x-api-key': KEY, 'anthropic-version': '2023-06-01' },
    );
    expect(sseEvents(raw.text)).toEqual(['message_start', 'content_block_start', 'ping', 'content_block_delta', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']);
    expect(raw.text).toContain('event: ping\ndata: {"type":"ping"}\n\n');
  });

  it('round-trips parallel tool_use blocks streamed as input_json_delta, then tool_result', async () => {
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'call get_weather {"city":"Rome","days":2} and get_time' }];
    const stream = client.messages.stream({ model: 'c', max_tokens: 200, messages, tools });
    let jsonDeltas = 0;
    stream.on('streamEvent', (e) => {
      if (e.type === 'content_block_delta' && e.delta.type === 'input_json_delta' && e.delta.partial_json !== '') jsonDeltas++;
    });
    const msg = await stream.finalMessage();
    expect(msg.stop_reason).toBe('tool_use');
    const uses = msg.content.filter((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use');
    expect(uses.map((u) => [u.name, u.input])).toEqual([
      ['get_weather', { city: 'Rome', days: 2 }],
      ['get_time', {}],
    ]);
    expect(jsonDeltas).toBeGreaterThan(2);

    const next = await client.messages.create({
      model: 'c',
      max_tokens: 200,
      tools,
      messages: [
        ...messages,
        { role: 'assistant', content: msg.content },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: uses[0]!.id, content: 'sunny' },
            { type: 'tool_result', tool_use_id: uses[1]!.id, content: [{ type: 'text', text: 'noon' }] },
          ],
        },
      ],
    });
    expect(next.stop_reason).toBe('end_turn');
    expect(next.content).toEqual([{ type: 'text', text: 'Tool get_weather returned: sunny\nTool get_time returned: noon' }]);
  });

  it('reports cache_creation on the first sight of a [cache] system prompt and cache_read afterwards', async () => {
    const body = { model: 'c', max_tokens: 50, system: '[cache] shared context', messages: [{ role: 'user' as const, content: 'q' }] };
    const prompt = promptTokens('messages', body);
    const half = Math.floor(prompt / 2);
    const first = await client.messages.create(body);
    expect(first.usage).toMatchObject({ input_tokens: prompt - half, cache_creation_input_tokens: half, cache_read_input_tokens: 0 });
    const second = await client.messages.create(body);
    expect(second.usage).toMatchObject({ input_tokens: prompt - half, cache_creation_input_tokens: 0, cache_read_input_tokens: half });
  });

  it('stops at max_tokens and returns thinking blocks when thinking is enabled', async () => {
    const msg = await client.messages.create({
      model: 'c',
      max_tokens: 2,
      thinking: { type: 'enabled', budget_tokens: 1024 },
      messages: [{ role: 'user', content: 'a long question indeed' }],
    });
    expect(msg.stop_reason).toBe('max_tokens');
    expect(msg.content[0]!.type).toBe('thinking');
    expect(msg.content[1]).toEqual({ type: 'text', text: 'Echo: a ' });
    expect(msg.usage.output_tokens).toBe(2 + 16);
  });

  it('requires max_tokens (400 invalid_request_error in the Anthropic error shape)', async () => {
    const err = await client.messages
      .create({ model: 'c', messages: [{ role: 'user', content: 'x' }] } as unknown as Anthropic.MessageCreateParamsNonStreaming)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    const e = err as InstanceType<typeof Anthropic.BadRequestError>;
    expect(e.status).toBe(400);
    expect(e.error).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: 'max_tokens: Field required' } });
  });
});
