import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type OpenAI from 'openai';
import { countTokens, outputTokens, promptTokens, startSimulator, type Simulator } from '../../src/simulator';
import { PNG_BASE64 } from '../../src/simulator/protocols/images';
import { openai, post, sseEvents } from './support';

let sim: Simulator;
let client: OpenAI;
beforeAll(async () => {
  sim = await startSimulator();
  client = openai(sim);
});
afterAll(() => sim.close());
beforeEach(() => sim.reset());

const tools: OpenAI.Responses.Tool[] = [
  { type: 'function', name: 'get_weather', strict: false, parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
];

describe('responses (openai SDK)', () => {
  it('answers a string input non-streaming with usage details', async () => {
    const res = await client.responses.create({ model: 'gpt-5-mini', instructions: 'be brief', input: 'hello' });
    expect(res.object).toBe('response');
    expect(res.status).toBe('completed');
    expect(res.output_text).toBe('Echo: hello');
    expect(res.output[0]).toMatchObject({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Echo: hello' }] });
    const prompt = promptTokens('responses', { instructions: 'be brief', input: 'hello' });
    expect(prompt).toBe(Math.ceil(JSON.stringify({ instructions: 'be brief', input: 'hello' }).length / 4));
    expect(res.usage).toEqual({
      input_tokens: prompt,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: countTokens('Echo: hello'),
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: prompt + countTokens('Echo: hello'),
    });
  });

  it('streams the named events with increasing sequence numbers', async () => {
    const stream = await client.responses.create({
      model: 'gpt-5-mini',
      input: [{ role: 'user', content: [{ type: 'input_text', text: 'alpha beta gamma' }] }],
      stream: true,
    });
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const e of stream) events.push(e);
    const types = events.map((e) => e.type);
    expect(types).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    const created = events[0] as OpenAI.Responses.ResponseCreatedEvent;
    expect(created.response.usage).toBeNull();
    const text = events.flatMap((e) => (e.type === 'response.output_text.delta' ? [e.delta] : [])).join('');
    expect(text).toBe('Echo: alpha beta gamma');
    const completed = events.at(-1) as OpenAI.Responses.ResponseCompletedEvent;
    expect(completed.response.usage!.output_tokens).toBe(countTokens(text));
    // the raw wire: each frame names its event
    const raw = await post(`${sim.url}/v1/responses`, { model: 'm', input: 'x', stream: true });
    expect(sseEvents(raw.text)[0]).toBe('response.created');
    expect(raw.text).toMatch(/^event: response\.created\ndata: \{"type":"response\.created"/);
  });

  it('round-trips a function call (streamed argument deltas, then function_call_output)', async () => {
    const input: OpenAI.Responses.ResponseInput = [{ role: 'user', content: 'call get_weather {"city":"Oslo"}' }];
    const stream = await client.responses.create({ model: 'gpt-5-mini', input, tools, stream: true });
    let deltas = 0;
    let done: OpenAI.Responses.ResponseFunctionCallArgumentsDoneEvent | undefined;
    let final: OpenAI.Responses.Response | undefined;
    for await (const e of stream) {
      if (e.type === 'response.function_call_arguments.delta') deltas++;
      if (e.type === 'response.function_call_arguments.done') done = e;
      if (e.type === 'response.completed') final = e.response;
    }
    expect(deltas).toBeGreaterThan(1);
    expect(done!.arguments).toBe('{"city":"Oslo"}');
    const call = final!.output.find((o) => o.type === 'function_call') as OpenAI.Responses.ResponseFunctionToolCall;
    expect(call).toMatchObject({ name: 'get_weather', arguments: '{"city":"Oslo"}', status: 'completed' });
    expect(call.call_id).toMatch(/^call_/);
    expect(final!.usage!.output_tokens).toBe(outputTokens('', [call]));

    const next = await client.responses.create({
      model: 'gpt-5-mini',
      tools,
      input: [...input, call, { type: 'function_call_output', call_id: call.call_id, output: '{"temp":3}' }],
    });
    expect(next.output_text).toBe('Tool get_weather returned: {"temp":3}');
  });

  it('marks a max_output_tokens cut as incomplete and reports reasoning tokens', async () => {
    const res = await client.responses.create({ model: 'm', input: 'x'.repeat(100), max_output_tokens: 4, reasoning: { effort: 'high' } });
    expect(res.status).toBe('incomplete');
    expect(res.incomplete_details).toEqual({ reason: 'max_output_tokens' });
    expect(res.output[0]!.type).toBe('reasoning');
    expect(res.usage!.output_tokens_details.reasoning_tokens).toBe(32);
    expect(res.usage!.output_tokens).toBe(4 + 32);
    const stream = await client.responses.create({ model: 'm', input: 'x'.repeat(100), max_output_tokens: 4, stream: true });
    const types: string[] = [];
    for await (const e of stream) types.push(e.type);
    expect(types.at(-1)).toBe('response.incomplete');
  });

  it('reports cached tokens when the instructions carry [cache]', async () => {
    const body = { model: 'm', instructions: '[cache] long instructions', input: [{ role: 'user' as const, content: 'q' }] };
    const res = await client.responses.create(body);
    expect(res.usage!.input_tokens_details.cached_tokens).toBe(Math.floor(promptTokens('responses', body) / 2));
  });

  it('works with the SDK stream helper (finalResponse)', async () => {
    const final = await client.responses.stream({ model: 'm', input: 'streamed helper' }).finalResponse();
    // openai 6.x: finalResponse() has no output_text convenience field (only create() adds it)
    const message = final.output.find((o) => o.type === 'message') as OpenAI.Responses.ResponseOutputMessage;
    expect(message.content[0]).toMatchObject({ type: 'output_text', text: 'Echo: streamed helper' });
    expect(final.usage!.output_tokens).toBe(countTokens('Echo: streamed helper'));
  });

  it('runs the built-in image tool: an image_generation_call item per "draw", streamed with its events', async () => {
    const body = { model: 'gpt-5', input: 'draw a fox and draw a hen', tools: [{ type: 'image_generation' as const, size: '1536x1024' as const }] };
    const res = await client.responses.create(body);
    const images = res.output.filter((o) => o.type === 'image_generation_call');
    expect(images).toHaveLength(2);
    expect(images[0]).toMatchObject({ status: 'completed', result: PNG_BASE64, size: '1536x1024', output_format: 'png', revised_prompt: 'draw a fox and draw a hen' });
    expect(res.output.at(-1)).toMatchObject({ type: 'message' });
    expect(res.output_text).toBe('Echo: draw a fox and draw a hen');
    // usage is the text model's own, as OpenAI reports it: the images are the items.
    expect(res.usage!.output_tokens).toBe(countTokens('Echo: draw a fox and draw a hen'));

    const stream = await client.responses.create({ ...body, input: 'draw', stream: true });
    const types: string[] = [];
    let done: unknown;
    for await (const e of stream) {
      types.push(e.type);
      if (e.type === 'response.output_item.done' && e.item.type === 'image_generation_call') done = e.item;
    }
    expect(types.slice(2, 7)).toEqual([
      'response.output_item.added',
      'response.image_generation_call.in_progress',
      'response.image_generation_call.generating',
      'response.image_generation_call.completed',
      'response.output_item.done',
    ]);
    expect(done).toMatchObject({ type: 'image_generation_call', result: PNG_BASE64 });

    // Not offered, or not asked to draw: no image.
    expect((await client.responses.create({ model: 'm', input: 'draw' })).output.map((o) => o.type)).toEqual(['message']);
    expect((await client.responses.create({ ...body, input: 'hello' })).output.map((o) => o.type)).toEqual(['message']);
  });
});
