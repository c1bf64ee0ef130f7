import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FunctionCallingConfigMode, Type, type GoogleGenAI, type Content, type Tool } from '@google/genai';
import { countTokens, promptTokens, startSimulator, type Simulator } from '../../src/simulator';
import { genai, KEY, post } from './support';

let sim: Simulator;
let client: GoogleGenAI;
beforeAll(async () => {
  sim = await startSimulator();
  client = genai(sim);
});
afterAll(() => sim.close());
beforeEach(() => sim.reset());

const tools: Tool[] = [
  {
    functionDeclarations: [
      { name: 'get_weather', parametersJsonSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
      { name: 'get_time', parameters: { type: Type.OBJECT, properties: { tz: { type: Type.STRING } } } },
    ],
  },
];

describe('generate content (@google/genai)', () => {
  it('answers generateContent with parts and usageMetadata; key in x-goog-api-key', async () => {
    const res = await client.models.generateContent({
      model: 'gemini-2.5-flash',
      contents: 'hello',
      config: { systemInstruction: 'be brief' },
    });
    expect(res.text).toBe('Echo: hello');
    expect(res.candidates![0]!.finishReason).toBe('STOP');
    expect(res.candidates![0]!.content!.role).toBe('model');
    const rec = sim.requests[0]!;
    expect(rec.path).toBe('/v1beta/models/gemini-2.5-flash:generateContent');
    expect(rec.model).toBe('gemini-2.5-flash');
    expect(rec.headers['x-goog-api-key']).toBe(KEY);
    const prompt = promptTokens('generate-content', rec.body);
    const body = rec.body as { contents: unknown; systemInstruction: unknown };
    expect(prompt).toBe(Math.ceil(JSON.stringify({ systemInstruction: body.systemInstruction, contents: body.contents }).length / 4));
    expect(res.usageMetadata).toEqual({
      promptTokenCount: prompt,
      candidatesTokenCount: countTokens('Echo: hello'),
      totalTokenCount: prompt + countTokens('Echo: hello'),
      promptTokensDetails: [{ modality: 'TEXT', tokenCount: prompt }],
    });
  });

  it('streams with alt=sse; the last chunk carries finishReason and the full usage', async () => {
    const stream = await client.models.generateContentStream({ model: 'gemini-2.5-flash', contents: 'red green blue' });
    const chunks = [];
    for await (const c of stream) chunks.push(c);
    expect(chunks.length).toBe(4);
    expect(chunks.map((c) => c.text).join('')).toBe('Echo: red green blue');
    expect(chunks.slice(0, -1).every((c) => c.candidates![0]!.finishReason === undefined)).toBe(true);
    const last = chunks.at(-1)!;
    expect(last.candidates![0]!.finishReason).toBe('STOP');
    expect(last.usageMetadata!.candidatesTokenCount).toBe(countTokens('Echo: red green blue'));
    expect(sim.requests[0]!.path).toBe('/v1beta/models/gemini-2.5-flash:streamGenerateContent');
    expect(sim.requests[0]!.query).toEqual({ alt: 'sse' });
  });

  it('round-trips parallel function calls and functionResponse parts', async () => {
    const contents: Content[] = [{ role: 'user', parts: [{ text: 'call get_weather {"city":"Lima"} then get_time' }] }];
    const res = await client.models.generateContent({ model: 'gemini-2.5-flash', contents, config: { tools } });
    expect(res.functionCalls!.map((c) => [c.name, c.args])).toEqual([
      ['get_weather', { city: 'Lima' }],
      ['get_time', { tz: expect.any(String) }],
    ]);
    const next = await client.models.generateContent({
      model: 'gemini-2.5-flash',
      config: { tools },
      contents: [
        ...contents,
        { role: 'model', parts: res.candidates![0]!.content!.parts! },
        {
          role: 'user',
          parts: [
            { functionResponse: { name: 'get_weather', response: { temp: 21 } } },
            { functionResponse: { name: 'get_time', response: { time: '09:00' } } },
          ],
        },
      ],
    });
    expect(next.text).toBe('Tool get_weather returned: {"temp":21}\nTool get_time returned: {"time":"09:00"}');

    // forced by toolConfig (mode ANY with one allowed name), streamed: one chunk carries the whole call
    const stream = await client.models.generateContentStream({
      model: 'gemini-2.5-flash',
      contents: 'what time?',
      config: { tools, toolConfig: { functionCallingConfig: { mode: FunctionCallingConfigMode.ANY, allowedFunctionNames: ['get_time'] } } },
    });
    const names: string[] = [];
    for await (const c of stream) names.push(...(c.functionCalls ?? []).map((f) => f.name!));
    expect(names).toEqual(['get_time']);
  });

  it('stops at maxOutputTokens with MAX_TOKENS; reports cached and thoughts tokens', async () => {
    const res = await client.models.generateContent({
      model: 'gemini-2.5-pro',
      contents: 'some long question here',
      config: { maxOutputTokens: 2, systemInstruction: '[cache] context', thinkingConfig: { thinkingBudget: 512, includeThoughts: true } },
    });
    expect(res.candidates![0]!.finishReason).toBe('MAX_TOKENS');
    expect(res.candidates![0]!.content!.parts![0]!.thought).toBe(true);
    expect(res.text).toBe('Echo: so');
    const u = res.usageMetadata!;
    expect(u.candidatesTokenCount).toBe(2);
    expect(u.thoughtsTokenCount).toBe(16);
    expect(u.cachedContentTokenCount).toBe(Math.floor(u.promptTokenCount! / 2));
    expect(u.totalTokenCount).toBe(u.promptTokenCount! + 2 + 16);
  });

  it('accepts ?key= and streams a JSON array without alt=sse', async () => {
    const url = `${sim.url}/v1beta/models/gemini-2.0-flash:streamGenerateContent?key=${KEY}`;
    const r = await post(url, { contents: [{ role: 'user', parts: [{ text: 'a b' }] }] }, {});
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toContain('application/json');
    const arr = JSON.parse(r.text) as { candidates: { content: { parts: { text: string }[] } }[] }[];
    expect(arr.map((x) => x.candidates[0]!.content.parts[0]!.text).join('')).toBe('Echo: a b');
    expect(sim.requests[0]!.apiKey).toBe(KEY);
  });

  it('refuses a revoked key as Gemini does: 400 INVALID_ARGUMENT with the ErrorInfo reason API_KEY_INVALID', async () => {
    sim.revokeKey(KEY);
    const r = await post(`${sim.url}/v1beta/models/gemini-2.0-flash:generateContent`, { contents: [{ role: 'user', parts: [{ text: 'a' }] }] }, { 'x-goog-api-key': KEY });
    expect(r.status).toBe(400);
    expect(JSON.parse(r.text)).toEqual({
      error: {
        code: 400,
        message: 'API key not valid. Please pass a valid API key.',
        status: 'INVALID_ARGUMENT',
        details: expect.arrayContaining([expect.objectContaining({ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'API_KEY_INVALID', domain: 'googleapis.com' })]),
      },
    });
  });
});
