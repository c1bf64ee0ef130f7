/**
 * Property: whatever two protocols can both express survives a trip through both of them —
 * requests, answers and streams, for all 16 ordered pairs (the 12 directions and each protocol
 * with itself) — and nothing is reported as dropped along the way.
 */
import { Type } from '@google/genai';
import { Ajv2020 } from 'ajv/dist/2020';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ChatProtocol } from '../../src/config/schema';
import {
  streamBridge,
  TRANSLATORS,
  type CanonicalEvent,
  type CanonicalRequest,
  type CanonicalResponse,
  type Message,
  type OutputPart,
  type Usage,
} from '../../src/upstream/translate';
import { schemaTypeProblem } from '../../src/simulator/schema-check';
import { CAPABILITIES, geminiSchemaArb, intersect, jsonSchemaArb, requestArb, responseArb } from './arbitraries';
import { PROTOCOLS } from './support';

const RUNS = Math.max(50, Math.min(Number(process.env.FC_RUNS ?? 200), 300));
const PAIRS = PROTOCOLS.flatMap((a) => PROTOCOLS.map((b) => [a, b] as const));
const MODEL = 'upstream-model';

function tripRequest(protocol: ChatProtocol, request: CanonicalRequest, dropped: string[]): CanonicalRequest {
  const t = TRANSLATORS[protocol];
  const encoded = t.encodeRequest(request, { model: MODEL, defaultMaxTokens: 4096 });
  const decoded = t.decodeRequest(JSON.parse(JSON.stringify(encoded.value)), { model: MODEL, stream: request.stream });
  dropped.push(...encoded.dropped, ...decoded.dropped);
  return decoded.value;
}

/** Tool-result names are inferred from the history where the wire has none: not compared. */
const withoutResultNames = (messages: readonly Message[]) =>
  messages.map((m) => ({ ...m, parts: m.parts.map((p) => (p.type === 'tool_result' ? { ...p, name: undefined } : p)) }));

/** `auto` is every vendor's default tool choice: spelled out or not, the same request. */
const normalized = (r: CanonicalRequest) => ({ ...r, messages: withoutResultNames(r.messages), toolChoice: r.toolChoice?.type === 'auto' ? undefined : r.toolChoice });

function tripResponse(protocol: ChatProtocol, response: CanonicalResponse): CanonicalResponse {
  const t = TRANSLATORS[protocol];
  return t.decodeResponse(JSON.parse(JSON.stringify(t.encodeResponse(response, { model: 'm', created: 1_700_000_000 }))));
}

/** The canonical events of an answer, its text cut into pieces of `size` characters. */
function eventsOf(response: CanonicalResponse, size: number): CanonicalEvent[] {
  const pieces = (s: string) => Array.from({ length: Math.ceil(s.length / size) }, (_, i) => s.slice(i * size, (i + 1) * size));
  const events: CanonicalEvent[] = [{ type: 'start', id: response.id, model: response.model }];
  let call = 0;
  for (const part of response.content) {
    if (part.type === 'text') for (const text of pieces(part.text)) events.push({ type: 'text_delta', text });
    else if (part.type === 'reasoning') for (const text of pieces(part.text)) events.push({ type: 'reasoning_delta', text });
    else {
      const index = call++;
      events.push({ type: 'tool_call_start', index, id: part.id, name: part.name });
      for (const args of pieces(part.arguments)) events.push({ type: 'tool_call_delta', index, arguments: args });
      events.push({ type: 'tool_call_end', index });
    }
  }
  events.push({ type: 'finish', reason: response.finishReason }, { type: 'usage', usage: response.usage! });
  return events;
}

/** An answer put together from its canonical events, as a client would. */
function accumulate(events: readonly CanonicalEvent[]): CanonicalResponse {
  let id = '';
  let model = '';
  const content: (OutputPart & { index?: number })[] = [];
  let finishReason: CanonicalResponse['finishReason'] = 'error';
  let usage: Usage | null = null;
  for (const e of events) {
    const last = content.at(-1);
    if (e.type === 'start') ({ id, model } = e);
    else if (e.type === 'text_delta') last?.type === 'text' ? (content[content.length - 1] = { type: 'text', text: last.text + e.text }) : content.push({ type: 'text', text: e.text });
    else if (e.type === 'reasoning_delta')
      last?.type === 'reasoning' ? (content[content.length - 1] = { type: 'reasoning', text: last.text + e.text }) : content.push({ type: 'reasoning', text: e.text });
    else if (e.type === 'tool_call_start') content.push({ type: 'tool_call', id: e.id, name: e.name, arguments: '', index: e.index });
    else if (e.type === 'tool_call_delta') {
      const at = content.findIndex((p) => p.type === 'tool_call' && p.index === e.index);
      const call = content[at] as OutputPart & { type: 'tool_call'; index: number };
      content[at] = { ...call, arguments: call.arguments + e.arguments };
    } else if (e.type === 'finish') finishReason = e.reason;
    else if (e.type === 'usage') usage = e.usage;
  }
  return { id, model, content: content.map(({ index: _index, ...p }) => p as OutputPart), finishReason, usage };
}

function tripStream(protocol: ChatProtocol, events: readonly CanonicalEvent[]): CanonicalEvent[] {
  const t = TRANSLATORS[protocol];
  const encoder = t.streamEncoder({ model: 'm', created: 1_700_000_000, includeUsage: true });
  const wire = [...events.flatMap((e) => encoder.push(e)), ...encoder.end()];
  const bridge = streamBridge(t.streamDecoder(), { push: (e) => [], end: () => [] });
  for (const e of wire) bridge.push(e);
  bridge.end();
  return [...bridge.canonical];
}

const comparable = (r: CanonicalResponse) => ({ ...r, created: undefined, model: undefined });

describe.each(PAIRS)('%s then %s', (a, b) => {
  const caps = intersect(CAPABILITIES[a], CAPABILITIES[b]);

  it('keeps every request field both express, and reports nothing dropped', () => {
    fc.assert(
      fc.property(requestArb(caps, MODEL), (request) => {
        const dropped: string[] = [];
        const back = tripRequest(b, tripRequest(a, request, dropped), dropped);
        expect(normalized(back)).toEqual(normalized(request));
        expect(dropped).toEqual([]);
      }),
      { numRuns: RUNS },
    );
  });

  it('keeps every answer field both express (usage as billed included)', () => {
    fc.assert(
      fc.property(responseArb(caps), (response) => {
        expect(comparable(tripResponse(b, tripResponse(a, response)))).toEqual(comparable(response));
      }),
      { numRuns: RUNS },
    );
  });

  it('keeps a streamed answer whatever the chunking', () => {
    fc.assert(
      fc.property(responseArb(caps), fc.integer({ min: 1, max: 7 }), (response, size) => {
        const back = accumulate(tripStream(b, tripStream(a, eventsOf(response, size))));
        expect(comparable(back)).toEqual(comparable(response));
      }),
      { numRuns: RUNS },
    );
  });
});

/** Fields a channel protocol cannot carry, and the name its encoder must report them under. */
const UNCARRIABLE: { field: string; lost: (request: CanonicalRequest, channel: ChatProtocol) => boolean }[] = [
  { field: 'stop', lost: (r, c) => c === 'responses' && r.stop !== undefined },
  { field: 'response_format', lost: (r, c) => c === 'messages' && r.responseFormat !== undefined && r.responseFormat.type !== 'text' },
  { field: 'parallel_tool_calls', lost: (r, c) => c === 'generate-content' && r.parallelToolCalls === false },
  { field: 'image.detail', lost: (r, c) => (c === 'messages' || c === 'generate-content') && r.messages.some((m) => m.parts.some((p) => p.type === 'image' && p.detail)) },
  { field: 'tools.image_generation', lost: (r, c) => c !== 'responses' && (r.builtinTools?.length ?? 0) > 0 },
  { field: 'tool_result.is_error', lost: (r, c) => c !== 'messages' && r.messages.some((m) => m.parts.some((p) => p.type === 'tool_result' && p.isError)) },
];

describe.each(PAIRS.filter(([a, b]) => a !== b))('a %s request for a %s channel', (client, channel) => {
  it('reports every field the channel cannot carry', () => {
    fc.assert(
      fc.property(requestArb(CAPABILITIES[client], MODEL), (request) => {
        const { dropped } = TRANSLATORS[channel].encodeRequest(request, { model: MODEL, defaultMaxTokens: 4096 });
        for (const { field, lost } of UNCARRIABLE) expect(dropped.includes(field)).toBe(lost(request, channel));
      }),
      { numRuns: RUNS },
    );
  });
});

/** Where each protocol's wire carries a function's schema and the structured-output schema. */
const SCHEMAS_IN: Record<ChatProtocol, (body: Record<string, any>) => { tool: unknown; format: unknown }> = {
  'chat-completions': (b) => ({ tool: b.tools?.[0]?.function?.parameters, format: b.response_format?.json_schema?.schema }),
  responses: (b) => ({ tool: b.tools?.[0]?.parameters, format: b.text?.format?.schema }),
  messages: (b) => ({ tool: b.tools?.[0]?.input_schema, format: undefined }),
  'generate-content': (b) => ({ tool: b.tools?.[0]?.functionDeclarations?.[0]?.parametersJsonSchema, format: b.generationConfig?.responseJsonSchema }),
};

describe.each(PAIRS)('a JSON Schema through %s then %s', (a, b) => {
  it('arrives unchanged as a function\'s parameters and, where both have it, as the response format', () => {
    const formats = intersect(CAPABILITIES[a], CAPABILITIES[b]).formats.filter((f) => f.startsWith('json_schema'));
    fc.assert(
      fc.property(jsonSchemaArb, (schema) => {
        const parameters = { type: 'object', properties: { value: schema } };
        const request: CanonicalRequest = {
          model: MODEL,
          messages: [{ role: 'user', parts: [{ type: 'text', text: 'hi' }] }],
          tools: [{ name: 'f', parameters }],
          ...(formats.length > 0 ? { responseFormat: { type: 'json_schema' as const, ...(formats[0] === 'json_schema_named' ? { name: 'r' } : {}), schema } } : {}),
          maxOutputTokens: 8192,
          stream: false,
        };
        const dropped: string[] = [];
        const back = tripRequest(b, tripRequest(a, request, dropped), dropped);
        expect(back.tools?.[0]?.parameters).toEqual(parameters);
        if (request.responseFormat) expect(back.responseFormat).toEqual(request.responseFormat);
        expect(dropped).toEqual([]);
      }),
      { numRuns: RUNS },
    );
  });
});

describe('a Gemini client\'s OpenAPI schemas (the SDK\'s Type enum)', () => {
  // Strict: a keyword JSON Schema does not know (nullable, propertyOrdering, example) is an error.
  const ajv = new Ajv2020({ strict: true, strictTypes: false, validateFormats: false });

  it.each(PROTOCOLS)('reach a %s channel as JSON Schema accepting the values Gemini accepts', (channel) => {
    fc.assert(
      fc.property(
        geminiSchemaArb.chain((c) => fc.tuple(fc.constant(c.schema), c.value)),
        ([schema, value]) => {
          const body = {
            contents: [{ role: 'user', parts: [{ text: 'hi' }] }],
            tools: [{ functionDeclarations: [{ name: 'f', parameters: schema }] }],
            generationConfig: { responseMimeType: 'application/json', responseSchema: schema },
          };
          const decoded = TRANSLATORS['generate-content'].decodeRequest(JSON.parse(JSON.stringify(body)), { model: MODEL, stream: false });
          expect(decoded.dropped).toEqual([]);
          const encoded = TRANSLATORS[channel].encodeRequest(decoded.value, { model: MODEL, defaultMaxTokens: 4096 });
          const sent = SCHEMAS_IN[channel](JSON.parse(JSON.stringify(encoded.value)));
          for (const s of [sent.tool, sent.format].filter((s) => s !== undefined)) {
            expect(schemaTypeProblem(s)).toBeNull();
            const validate = ajv.compile(s as object);
            expect(validate(value)).toBe(true);
            // null passes exactly where Gemini lets it: nullable, NULL, or no type at all.
            if (!('anyOf' in schema)) expect(validate(null)).toBe(schema.nullable === true || schema.type === Type.NULL || schema.type === Type.TYPE_UNSPECIFIED);
          }
        },
      ),
      { numRuns: RUNS },
    );
  });
});
