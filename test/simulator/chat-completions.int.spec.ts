import { afterAll, beforeEach, beforeAll, describe, expect, it } from 'vitest';
import type OpenAI from 'openai';
import { countTokens, outputTokens, promptTokens, startSimulator, type Simulator } from '../../src/simulator';
import { KEY, openai, post, sseData } from './support';

let sim: Simulator;
let client: OpenAI;
beforeAll(async () => {
  sim = await startSimulator();
  client = openai(sim);
});
afterAll(() => sim.close());
beforeEach(() => sim.reset());

const tools: OpenAI.Chat.ChatCompletionTool[] = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'weather for a city',
      parameters: { type: 'object', properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['c', 'f'] } }, required: ['city'] },
    },
  },
  { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: { tz: { type: 'string' } } } } },
];

describe('chat completions (openai SDK)', () => {
  it('answers non-streaming with the echo text and the documented usage, and records the request', async () => {
    const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'hello there' },
    ];
    const res = await client.chat.completions.create({ model: 'gpt-4o-mini-2024-07-18', messages });
    expect(res.object).toBe('chat.completion');
    expect(res.model).toBe('gpt-4o-mini-2024-07-18');
    expect(res.choices[0]!.message).toMatchObject({ role: 'assistant', content: 'Echo: hello there' });
    expect(res.choices[0]!.finish_reason).toBe('stop');
    const prompt = Math.ceil(JSON.stringify(messages).length / 4);
    expect(prompt).toBe(promptTokens('chat-completions', { messages }));
    expect(res.usage).toEqual({
      prompt_tokens: prompt,
      completion_tokens: countTokens('Echo: hello there'),
      total_tokens: prompt + countTokens('Echo: hello there'),
      prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
    });
    expect(sim.requests).toHaveLength(1);
    const rec = sim.requests[0]!;
    expect(rec).toMatchObject({ method: 'POST', path: '/v1/chat/completions', protocol: 'chat-completions', model: 'gpt-4o-mini-2024-07-18', apiKey: KEY, stream: false });
    expect(rec.headers.authorization).toBe(`Bearer ${KEY}`);
    expect((rec.body as { messages: unknown }).messages).toEqual(messages);
  });

  it('streams chunks with a trailing usage chunk when include_usage is set', async () => {
    const stream = await client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'one two three four' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks: OpenAI.Chat.ChatCompletionChunk[] = [];
    for await (const c of stream) chunks.push(c);
    expect(chunks.every((c) => c.object === 'chat.completion.chunk')).toBe(true);
    expect(chunks[0]!.choices[0]!.delta.role).toBe('assistant');
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
    expect(text).toBe('Echo: one two three four');
    expect(chunks.filter((c) => c.choices[0]?.delta.content).length).toBeGreaterThan(3);
    const finish = chunks.find((c) => c.choices[0]?.finish_reason);
    expect(finish!.choices[0]!.finish_reason).toBe('stop');
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage!.completion_tokens).toBe(countTokens(text));
    expect(chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true);
  });

  it('ends the raw stream with data: [DONE] and has no usage chunk without include_usage', async () => {
    const r = await post(`${sim.url}/v1/chat/completions`, { model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: true });
    expect(r.headers.get('content-type')).toContain('text/event-stream');
    const data = sseData(r.text);
    expect(data.at(-1)).toBe('[DONE]');
    expect(r.text.endsWith('data: [DONE]\n\n')).toBe(true);
    const parsed = data.slice(0, -1).map((d) => JSON.parse(d) as Record<string, unknown>);
    expect(parsed.some((p) => 'usage' in p)).toBe(false);
  });

  it('truncates to max_tokens with finish_reason length', async () => {
    const res = await client.chat.completions.create({
      model: 'm',
      max_tokens: 3,
      messages: [{ role: 'user', content: 'a rather long sentence that will not fit' }],
    });
    expect(res.choices[0]!.finish_reason).toBe('length');
    expect(res.choices[0]!.message.content).toBe('Echo: a rath');
    expect(res.usage!.completion_tokens).toBe(3);
  });

  it('reports cached tokens for the [cache] marker and reasoning tokens for reasoning models', async () => {
    const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [
      { role: 'system', content: '[cache] a long shared system prompt' },
      { role: 'user', content: 'q' },
    ];
    const res = await client.chat.completions.create({ model: 'deepseek-reasoner', messages });
    const prompt = promptTokens('chat-completions', { messages });
    expect(res.usage!.prompt_tokens_details!.cached_tokens).toBe(Math.floor(prompt / 2));
    expect(res.usage!.completion_tokens_details!.reasoning_tokens).toBe(16);
    expect(res.usage!.completion_tokens).toBe(countTokens('Echo: q') + 16);
    const high = await client.chat.completions.create({ model: 'm', reasoning_effort: 'high', messages: [{ role: 'user', content: 'q' }] });
    expect(high.usage!.completion_tokens_details!.reasoning_tokens).toBe(32);
  });

  it('round-trips parallel tool calls streamed as argument deltas', async () => {
    const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [
      { role: 'user', content: 'please call get_weather {"city":"Paris","unit":"c"} and get_time' },
    ];
    const stream = await client.chat.completions.create({ model: 'm', messages, tools, stream: true, stream_options: { include_usage: true } });
    const calls: { id: string; name: string; arguments: string }[] = [];
    let argumentChunks = 0;
    let finish: string | null = null;
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      usage = chunk.usage ?? usage;
      const choice = chunk.choices[0];
      if (!choice) continue;
      finish = choice.finish_reason ?? finish;
      for (const d of choice.delta.tool_calls ?? []) {
        if (d.id) calls[d.index] = { id: d.id, name: d.function!.name!, arguments: '' };
        if (d.function?.arguments) {
          calls[d.index]!.arguments += d.function.arguments;
          argumentChunks++;
        }
      }
    }
    expect(finish).toBe('tool_calls');
    expect(calls.map((c) => c.name)).toEqual(['get_weather', 'get_time']);
    expect(JSON.parse(calls[0]!.arguments)).toEqual({ city: 'Paris', unit: 'c' });
    // Arguments not written in the text are generated from the schema (a string for tz).
    expect(JSON.parse(calls[1]!.arguments)).toEqual({ tz: expect.any(String) });
    expect(argumentChunks).toBeGreaterThan(2);
    expect(usage!.completion_tokens).toBe(outputTokens('', calls));

    const next = await client.chat.completions.create({
      model: 'm',
      tools,
      messages: [
        ...messages,
        {
          role: 'assistant',
          content: null,
          tool_calls: calls.map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.name, arguments: c.arguments } })),
        },
        { role: 'tool', tool_call_id: calls[0]!.id, content: '18 degrees' },
        { role: 'tool', tool_call_id: calls[1]!.id, content: '10:00' },
      ],
    });
    expect(next.choices[0]!.finish_reason).toBe('stop');
    expect(next.choices[0]!.message.content).toBe('Tool get_weather returned: 18 degrees\nTool get_time returned: 10:00');
  });

  it('calls the named tool non-streaming (tool_choice) and honours parallel_tool_calls: false', async () => {
    const res = await client.chat.completions.create({
      model: 'm',
      tools,
      tool_choice: { type: 'function', function: { name: 'get_time' } },
      messages: [{ role: 'user', content: 'what time is it?' }],
    });
    expect(res.choices[0]!.finish_reason).toBe('tool_calls');
    expect(res.choices[0]!.message.content).toBeNull();
    const call = res.choices[0]!.message.tool_calls![0]!;
    expect(call.type === 'function' && call.function.name).toBe('get_time');
    const single = await client.chat.completions.create({
      model: 'm',
      tools,
      parallel_tool_calls: false,
      messages: [{ role: 'user', content: 'call get_time and get_weather' }],
    });
    expect(single.choices[0]!.message.tool_calls).toHaveLength(1);
    const none = await client.chat.completions.create({ model: 'm', tools, messages: [{ role: 'user', content: 'just chat' }] });
    expect(none.choices[0]!.message.tool_calls).toBeUndefined();
  });

  it('works with the SDK stream helper (finalChatCompletion assembles tool calls)', async () => {
    const final = await client.chat.completions
      .stream({ model: 'm', tools, messages: [{ role: 'user', content: 'call get_weather' }], stream_options: { include_usage: true } })
      .finalChatCompletion();
    expect(final.choices[0]!.finish_reason).toBe('tool_calls');
    const call = final.choices[0]!.message.tool_calls![0]!;
    const args = call.type === 'function' ? call.function.arguments : '';
    expect(JSON.parse(args)).toEqual({ city: expect.any(String), unit: expect.stringMatching(/^[cf]$/) });
    expect(final.usage!.completion_tokens).toBe(outputTokens('', [{ name: 'get_weather', arguments: args }]));
  });
});
