/**
 * A `@google/genai` client declaring functions and a response schema with the SDK's `Type` enum
 * (upper-case OpenAPI type names, `nullable`, int64 counts as strings, `propertyOrdering`), on
 * models served by channels of the three other protocols: what reaches each channel is JSON
 * Schema (the simulator refuses other type names with the vendor's 400, as OpenAI and Anthropic do).
 */
import { GoogleGenAI, Type, type Schema } from '@google/genai';
import { Ajv2020 } from 'ajv/dist/2020';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MODEL_OF, startHarness, type Harness } from './sdk-support';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.close());

const WEATHER: Schema = {
  type: Type.OBJECT,
  properties: {
    unit: { type: Type.STRING, format: 'enum', enum: ['celsius', 'fahrenheit'], nullable: true },
    city: { type: Type.STRING, description: 'City name' },
    days: { type: Type.INTEGER, format: 'int32', minimum: 1, maximum: 7 },
    hours: { type: Type.ARRAY, items: { type: Type.NUMBER, format: 'double' }, minItems: '1', maxItems: '24' },
  },
  required: ['city'],
  propertyOrdering: ['city', 'days', 'hours', 'unit'],
};

const WEATHER_JSON_SCHEMA = {
  type: 'object',
  properties: {
    city: { type: 'string', description: 'City name' },
    days: { type: 'integer', minimum: 1, maximum: 7 },
    hours: { type: 'array', items: { type: 'number' }, minItems: 1, maxItems: 24 },
    unit: { type: ['string', 'null'], enum: ['celsius', 'fahrenheit', null] },
  },
  required: ['city'],
};

/** Where each channel protocol carries function schemas and structured-output schemas. */
const upstreamSchemas = {
  'chat-completions': (body: Record<string, any>) => ({ tool: body.tools?.[0]?.function?.parameters, format: body.response_format?.json_schema?.schema }),
  responses: (body: Record<string, any>) => ({ tool: body.tools?.[0]?.parameters, format: body.text?.format?.schema }),
  messages: (body: Record<string, any>) => ({ tool: body.tools?.[0]?.input_schema, format: undefined }),
} as const;

describe.each(Object.keys(upstreamSchemas) as (keyof typeof upstreamSchemas)[])('a Gemini client using the SDK Type enum, served by a %s channel', (channel) => {
  it.each([false, true])('gets its function called, the channel having received JSON Schema (stream: %s)', async (stream) => {
    const { key } = await h.t.accountWithKey();
    const ai = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: h.baseUrl } });
    const request = {
      model: MODEL_OF[channel],
      contents: 'Please call get_weather',
      config: { tools: [{ functionDeclarations: [{ name: 'get_weather', description: 'Weather in a city', parameters: WEATHER }] }] },
    };
    const chunks = stream ? [] : [await ai.models.generateContent(request)];
    if (stream) for await (const chunk of await ai.models.generateContentStream(request)) chunks.push(chunk);
    const calls = chunks.flatMap((c) => c.functionCalls ?? []);
    // The simulated model generates the arguments from the schema it received: valid against it.
    expect(calls.map((c) => c.name)).toEqual(['get_weather']);
    const valid = new Ajv2020({ strict: false }).compile(WEATHER_JSON_SCHEMA);
    expect(valid(calls[0]!.args), JSON.stringify(valid.errors)).toBe(true);
    const sent = upstreamSchemas[channel](h.sim.requests.at(-1)!.body as Record<string, any>);
    expect(sent.tool).toEqual(WEATHER_JSON_SCHEMA);
    // propertyOrdering survives as the order of the properties.
    expect(Object.keys(sent.tool.properties)).toEqual(['city', 'days', 'hours', 'unit']);
  });
});

describe.each(['chat-completions', 'responses'] as const)('a Gemini client asking for structured output with the SDK Type enum, served by a %s channel', (channel) => {
  it('gets JSON, the channel having received the response schema as JSON Schema', async () => {
    const { key } = await h.t.accountWithKey();
    const ai = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: h.baseUrl } });
    const answer = await ai.models.generateContent({
      model: MODEL_OF[channel],
      contents: 'List two cities',
      config: {
        responseMimeType: 'application/json',
        responseSchema: { type: Type.ARRAY, items: { type: Type.OBJECT, properties: { name: { type: Type.STRING }, rank: { type: Type.INTEGER, nullable: true } }, required: ['name'] } },
      },
    });
    const schema = {
      type: 'array',
      items: { type: 'object', properties: { name: { type: 'string' }, rank: { type: ['integer', 'null'] } }, required: ['name'] },
    };
    expect(upstreamSchemas[channel](h.sim.requests.at(-1)!.body as Record<string, any>).format).toEqual(schema);
    // The simulated model answers JSON valid against the schema it received.
    expect(new Ajv2020({ strict: false }).validate(schema, JSON.parse(answer.text!))).toBe(true);
  });
});
