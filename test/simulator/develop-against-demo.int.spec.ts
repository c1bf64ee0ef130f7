/**
 * Issue 33, item 13: the zero-setup demo as a development upstream. An app developed against the gateway
 * on the bundled demo config (channels on the simulator) gets tool calls whose arguments satisfy the
 * tool's schema and structured output its SDK's own validation accepts, the same for the same request.
 */
import Anthropic from '@anthropic-ai/sdk';
import { zodOutputFormat } from '@anthropic-ai/sdk/helpers/zod';
import { GoogleGenAI, Type } from '@google/genai';
import { Ajv2020 } from 'ajv/dist/2020';
import OpenAI from 'openai';
import { zodResponseFormat, zodTextFormat } from 'openai/helpers/zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { loadConfig } from '../../src/config/load';
import { startSimulatedGateway, type SimulatedGateway } from '../support/gateway';

let h: SimulatedGateway;
let key: string;
beforeAll(async () => {
  h = await startSimulatedGateway((sim) => loadConfig(undefined, { SIMULATOR_URL: sim.url }).config);
  key = (await h.t.accountWithKey()).key;
}, 120_000);
afterAll(() => h?.close());

const openai = () => new OpenAI({ apiKey: key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
const ajv = new Ajv2020({ strict: true, allErrors: true });

/** Constraints a fixed sample ("test", 1, [], true) does not meet. */
const bookingSchema = {
  type: 'object',
  properties: {
    city: { type: 'string', minLength: 8, maxLength: 20 },
    code: { type: 'string', pattern: '^[A-Z]{3}-\\d{4}$' },
    nights: { type: 'integer', minimum: 2, maximum: 14 },
    guests: { type: 'array', minItems: 1, maxItems: 4, items: { type: 'object', properties: { name: { type: 'string', minLength: 2 }, age: { type: 'integer', minimum: 18 } }, required: ['name', 'age'], additionalProperties: false } },
    room: { type: 'string', enum: ['single', 'double', 'suite'] },
    breakfast: { type: 'boolean' },
  },
  required: ['city', 'code', 'nights', 'guests', 'room', 'breakfast'],
  additionalProperties: false,
} as const;
const validBooking = ajv.compile(bookingSchema);

const Event = z.object({
  name: z.string().min(3),
  date: z.string().regex(/^\d{4}-\d{2}-\d{2}$/),
  attendees: z.array(z.object({ name: z.string(), role: z.enum(['host', 'guest']) })).min(1),
  budget: z.number().min(100).max(5000),
  notes: z.string().nullable(),
});

describe('developing against the demo (the simulator as a mock model)', () => {
  it('openai chat.completions.parse with a zod response format succeeds, and the answer is the same for the same request', async () => {
    const ask = () =>
      openai().chat.completions.parse({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'Plan the team offsite' }],
        response_format: zodResponseFormat(Event, 'event'),
      });
    const first = await ask();
    const event = first.choices[0]!.message.parsed;
    expect(Event.parse(event)).toEqual(event);
    expect((await ask()).choices[0]!.message.content).toBe(first.choices[0]!.message.content);
    // json_object without a schema: still one JSON object.
    const plain = await openai().chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'json please' }], response_format: { type: 'json_object' } });
    expect(typeof JSON.parse(plain.choices[0]!.message.content!)).toBe('object');
  });

  it('openai responses.parse with a zod text format succeeds', async () => {
    const answer = await openai().responses.parse({ model: 'gpt-5-mini', input: 'Plan the team offsite', text: { format: zodTextFormat(Event, 'event') } });
    expect(Event.safeParse(answer.output_parsed).success).toBe(true);
  });

  it('a tool asked for in the prompt (or by the tool_call scenario) is called with arguments valid against its schema', async () => {
    const tools: OpenAI.Chat.ChatCompletionTool[] = [
      { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: { tz: { type: 'string' } } } } },
      { type: 'function', function: { name: 'book_hotel', parameters: bookingSchema as unknown as Record<string, unknown> } },
    ];
    for (const content of ['Please call book_hotel for the offsite', 'Book the offsite [[sim:tool_call:book_hotel]]']) {
      const answer = await openai().chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }], tools });
      const choice = answer.choices[0]!;
      expect(choice.finish_reason).toBe('tool_calls');
      const call = choice.message.tool_calls![0]!;
      expect(call.type === 'function' && call.function.name).toBe('book_hotel');
      const args = JSON.parse(call.type === 'function' ? call.function.arguments : '');
      expect(validBooking(args), JSON.stringify(validBooking.errors)).toBe(true);
    }
    // Streamed, the same arguments arrive in pieces.
    const stream = await openai().chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Please call book_hotel for the offsite' }], tools, stream: true });
    let streamed = '';
    for await (const chunk of stream) streamed += chunk.choices[0]?.delta.tool_calls?.[0]?.function?.arguments ?? '';
    expect(validBooking(JSON.parse(streamed))).toBe(true);
  });

  it('anthropic: a forced tool (tool_choice type tool) answers input valid against its input_schema', async () => {
    const anthropic = new Anthropic({ apiKey: key, baseURL: h.baseUrl, maxRetries: 0 });
    const message = await anthropic.messages.create({
      model: 'claude-sonnet-4-5',
      max_tokens: 1024,
      messages: [{ role: 'user', content: 'Book the offsite' }],
      tools: [{ name: 'book_hotel', description: 'books rooms', input_schema: bookingSchema as unknown as Anthropic.Tool.InputSchema }],
      tool_choice: { type: 'tool', name: 'book_hotel' },
    });
    expect(message.stop_reason).toBe('tool_use');
    const use = message.content.find((b) => b.type === 'tool_use');
    expect(use?.type === 'tool_use' && use.name).toBe('book_hotel');
    expect(validBooking(use?.type === 'tool_use' ? use.input : null), JSON.stringify(validBooking.errors)).toBe(true);
  });

  it('anthropic messages.parse with a zod output format (output_config.format) succeeds', async () => {
    // The SDK sends string patterns and number ranges as description text (Anthropic's schema subset), so
    // only what reaches the model as schema is asked for here.
    const Plan = z.object({ name: z.string(), attendees: z.array(z.object({ name: z.string(), role: z.enum(['host', 'guest']) })), budget: z.number(), notes: z.string().nullable() });
    const anthropic = new Anthropic({ apiKey: key, baseURL: h.baseUrl, maxRetries: 0 });
    const message = await anthropic.messages.parse({
      model: 'claude-sonnet-4-5',
      max_tokens: 1024,
      messages: [{ role: 'user', content: 'Plan the team offsite' }],
      output_config: { format: zodOutputFormat(Plan) },
    });
    expect(Plan.safeParse(message.parsed_output).success).toBe(true);
  });

  it('@google/genai: responseSchema (OpenAPI subset) and responseJsonSchema answer JSON valid against the schema', async () => {
    const ai = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: h.baseUrl } });
    const responseSchema = {
      type: Type.OBJECT,
      properties: {
        title: { type: Type.STRING, minLength: '5' },
        rating: { type: Type.INTEGER, format: 'int32', minimum: 1, maximum: 5 },
        tags: { type: Type.ARRAY, items: { type: Type.STRING, enum: ['fun', 'long', 'short'] }, minItems: '1' },
        sequel: { type: Type.STRING, nullable: true },
      },
      required: ['title', 'rating', 'tags', 'sequel'],
    };
    const answer = await ai.models.generateContent({
      model: 'gemini-2.5-flash',
      contents: 'Review a film',
      config: { responseMimeType: 'application/json', responseSchema },
    });
    // The same schema in JSON Schema's spelling, written out here.
    const asJsonSchema = {
      type: 'object',
      properties: {
        title: { type: 'string', minLength: 5 },
        rating: { type: 'integer', minimum: 1, maximum: 5 },
        tags: { type: 'array', items: { type: 'string', enum: ['fun', 'long', 'short'] }, minItems: 1 },
        sequel: { type: ['string', 'null'] },
      },
      required: ['title', 'rating', 'tags', 'sequel'],
    };
    const valid = ajv.compile(asJsonSchema);
    expect(valid(JSON.parse(answer.text!)), `${answer.text} ${JSON.stringify(valid.errors)}`).toBe(true);

    const json = await ai.models.generateContent({
      model: 'gemini-2.5-flash',
      contents: 'Book the offsite',
      config: { responseMimeType: 'application/json', responseJsonSchema: bookingSchema },
    });
    expect(validBooking(JSON.parse(json.text!)), json.text).toBe(true);
  });
});
