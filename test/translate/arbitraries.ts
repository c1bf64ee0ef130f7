/**
 * fast-check generators of canonical requests and answers limited to what a set of protocols
 * can all express, so that a trip through any of them must give the value back unchanged.
 */
import { Type } from '@google/genai';
import fc from 'fast-check';
import type { ChatProtocol } from '../../src/config/schema';
import type { CanonicalRequest, CanonicalResponse, FunctionTool, Message, OutputPart, Part, ResponseFormat, Usage } from '../../src/upstream/translate';

type Parallel = 0 | 1 | 2; // none < only `false` < true and false
type Format = 'text' | 'json_object' | 'json_schema_named' | 'json_schema_bare';

/** What a protocol's request can carry beyond the fields all four share. */
export interface Capabilities {
  readonly stop: boolean;
  readonly imageDetail: boolean;
  readonly toolError: boolean;
  readonly parallel: Parallel;
  readonly formats: readonly Format[];
  readonly reasoning: 'effort' | 'budget' | 'none';
  readonly maxTemperature: number;
  /** messages: max_tokens is required (a default fills it), and thinking excludes temperature. */
  readonly anthropic: boolean;
  /** Signed (Anthropic) thinking in the history. */
  readonly signedReasoning: boolean;
  /** Usage fields the answer can carry besides prompt, cached and output tokens. */
  readonly cacheWrite: boolean;
  readonly reasoningTokens: boolean;
  /** The built-in image tool: read from a client request only, or also sent to a channel. */
  readonly imageTool: 'none' | 'reads' | 'both';
}

export const CAPABILITIES: Record<ChatProtocol, Capabilities> = {
  'chat-completions': { stop: true, imageDetail: true, toolError: false, parallel: 2, formats: ['text', 'json_object', 'json_schema_named'], reasoning: 'effort', maxTemperature: 2, anthropic: false, signedReasoning: false, cacheWrite: false, reasoningTokens: true, imageTool: 'reads' },
  messages: { stop: true, imageDetail: false, toolError: true, parallel: 1, formats: [], reasoning: 'budget', maxTemperature: 1, anthropic: true, signedReasoning: true, cacheWrite: true, reasoningTokens: false, imageTool: 'none' },
  responses: { stop: false, imageDetail: true, toolError: false, parallel: 2, formats: ['text', 'json_object', 'json_schema_named'], reasoning: 'effort', maxTemperature: 2, anthropic: false, signedReasoning: false, cacheWrite: false, reasoningTokens: true, imageTool: 'both' },
  'generate-content': { stop: true, imageDetail: false, toolError: false, parallel: 0, formats: ['json_object', 'json_schema_bare'], reasoning: 'budget', maxTemperature: 2, anthropic: false, signedReasoning: false, cacheWrite: false, reasoningTokens: true, imageTool: 'none' },
};

export function intersect(a: Capabilities, b: Capabilities): Capabilities {
  return {
    stop: a.stop && b.stop,
    imageDetail: a.imageDetail && b.imageDetail,
    toolError: a.toolError && b.toolError,
    parallel: Math.min(a.parallel, b.parallel) as Parallel,
    formats: a.formats.filter((f) => b.formats.includes(f)),
    reasoning: a.reasoning === b.reasoning ? a.reasoning : 'none',
    maxTemperature: Math.min(a.maxTemperature, b.maxTemperature),
    anthropic: a.anthropic || b.anthropic,
    signedReasoning: a.signedReasoning && b.signedReasoning,
    cacheWrite: a.cacheWrite && b.cacheWrite,
    reasoningTokens: a.reasoningTokens && b.reasoningTokens,
    // Through both: only where each reads and sends it.
    imageTool: a.imageTool === 'both' && b.imageTool === 'both' ? 'both' : 'none',
  };
}

const word = fc.stringMatching(/^[a-z]{1,8}$/);
const text = fc.array(word, { minLength: 1, maxLength: 6 }).map((w) => w.join(' '));
const identifier = fc.stringMatching(/^[a-z][a-z_]{0,11}$/);
const hundredths = (max: number) => fc.integer({ min: 0, max: Math.round(max * 100) }).map((n) => n / 100);
const opt = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });

const argumentsText = fc
  .dictionary(identifier, fc.oneof(word, fc.integer({ min: -1000, max: 1000 }), fc.boolean()), { maxKeys: 3 })
  .map((o) => JSON.stringify(o));

function image(caps: Capabilities): fc.Arbitrary<Part> {
  const source = fc.oneof(
    word.map((w) => ({ kind: 'url' as const, url: `https://example.com/images/${w}.png` })),
    fc.stringMatching(/^[A-Za-z0-9+/]{4,40}$/).map((data) => ({ kind: 'base64' as const, mediaType: 'image/png', data })),
  );
  return fc.record({ source, detail: caps.imageDetail ? opt(fc.constantFrom('low', 'high')) : fc.constant(undefined) }).map(({ source, detail }) => ({
    type: 'image' as const,
    source,
    ...(detail ? { detail } : {}),
  }));
}

function conversation(caps: Capabilities, tools: readonly FunctionTool[]): fc.Arbitrary<Message[]> {
  const userParts = fc.array(fc.oneof({ arbitrary: text.map((t): Part => ({ type: 'text', text: t })), weight: 3 }, image(caps)), { minLength: 1, maxLength: 3 });
  const turn = (at: number) =>
    fc
      .record({
        reasoning: caps.signedReasoning ? opt(fc.record({ text, signature: fc.stringMatching(/^[A-Za-z0-9]{8,16}$/) })) : fc.constant(undefined),
        text: opt(text),
        calls: tools.length > 0 ? fc.array(fc.record({ tool: fc.constantFrom(...tools), args: argumentsText }), { maxLength: 3 }) : fc.constant([] as { tool: FunctionTool; args: string }[]),
        results: fc.array(fc.record({ content: text, isError: caps.toolError ? fc.boolean() : fc.constant(false) }), { minLength: 3, maxLength: 3 }),
        next: userParts,
      })
      .map(({ reasoning, text: t, calls, results, next }): Message[] => {
        const parts: Part[] = [];
        if (reasoning) parts.push({ type: 'reasoning', text: reasoning.text, signature: reasoning.signature });
        if (t || calls.length === 0) parts.push({ type: 'text', text: t ?? 'ok' });
        calls.forEach((c, i) => parts.push({ type: 'tool_call', id: `call_${at}_${i}`, name: c.tool.name, arguments: c.args }));
        // The user answers calls with their results, anything else with a new question.
        const reply: Part[] =
          calls.length > 0
            ? calls.map((_, i) => ({ type: 'tool_result' as const, callId: `call_${at}_${i}`, content: results[i]!.content, ...(results[i]!.isError ? { isError: true } : {}) }))
            : next;
        return [{ role: 'assistant', parts }, { role: 'user', parts: reply }];
      });
  return fc.tuple(userParts, fc.integer({ min: 0, max: 3 })).chain(([first, turns]) =>
    turns === 0 ? fc.constant([{ role: 'user' as const, parts: first }]) : fc.tuple(...Array.from({ length: turns }, (_, i) => turn(i))).map((ts) => [{ role: 'user' as const, parts: first }, ...ts.flat()]),
  );
}

/** A JSON Schema as clients of the OpenAI and Anthropic SDKs write them: nested objects, arrays,
 * enums, type unions with null, anyOf, bounds and annotations. Every protocol must carry it unchanged. */
export const jsonSchemaArb: fc.Arbitrary<Record<string, unknown>> = fc.letrec<{ node: Record<string, unknown> }>((tie) => ({
  node: fc.oneof(
    { maxDepth: 2, withCrossShrink: true },
    fc.record({ type: fc.constantFrom('string', 'number', 'integer', 'boolean', 'null') }, { requiredKeys: ['type'] }),
    fc.record({ type: fc.constant(['string', 'null']), enum: fc.uniqueArray(word, { minLength: 1, maxLength: 3 }).map((e) => [...e, null]) }),
    fc.record({ type: fc.constant('integer'), minimum: fc.integer({ min: -5, max: 0 }), maximum: fc.integer({ min: 1, max: 5 }), description: text }, { requiredKeys: ['type'] }),
    fc.record({ type: fc.constant('array'), items: tie('node'), minItems: fc.integer({ min: 0, max: 2 }) }, { requiredKeys: ['type', 'items'] }),
    fc.record({ anyOf: fc.array(tie('node'), { minLength: 1, maxLength: 3 }) }),
    fc
      .uniqueArray(identifier, { minLength: 1, maxLength: 3 })
      .chain((names) => fc.record({ props: fc.tuple(...names.map(() => tie('node'))), required: fc.subarray(names), additional: fc.boolean() }).map((r) => ({ names, ...r })))
      .map(({ names, props, required, additional }) => ({
        type: 'object',
        properties: Object.fromEntries(names.map((n, i) => [n, props[i]])),
        ...(required.length > 0 ? { required } : {}),
        ...(additional ? {} : { additionalProperties: false }),
      })),
  ),
})).node;

const toolsArb = fc.uniqueArray(identifier, { maxLength: 3 }).chain((names) =>
  fc.tuple(
    ...names.map((name) =>
      fc.record({ description: opt(text), props: fc.uniqueArray(identifier, { minLength: 1, maxLength: 3 }) }).map(({ description, props }): FunctionTool => ({
        name,
        ...(description ? { description } : {}),
        parameters: { type: 'object', properties: Object.fromEntries(props.map((p) => [p, { type: 'string' }])), required: [props[0]] },
      })),
    ),
  ),
);

function formatArb(caps: Capabilities): fc.Arbitrary<ResponseFormat | undefined> {
  if (caps.formats.length === 0) return fc.constant(undefined);
  const schema = fc.uniqueArray(identifier, { minLength: 1, maxLength: 3 }).map((props) => ({ type: 'object', properties: Object.fromEntries(props.map((p) => [p, { type: 'string' }])) }));
  return opt(
    fc.constantFrom(...caps.formats).chain((f): fc.Arbitrary<ResponseFormat> =>
      f === 'json_schema_named'
        ? fc.record({ name: identifier, schema, strict: opt(fc.boolean()) }).map((r) => ({ type: 'json_schema', name: r.name, schema: r.schema, ...(r.strict !== undefined ? { strict: r.strict } : {}) }))
        : f === 'json_schema_bare'
          ? schema.map((s) => ({ type: 'json_schema', schema: s }))
          : fc.constant({ type: f }),
    ),
  );
}

export function requestArb(caps: Capabilities, model = 'upstream-model'): fc.Arbitrary<CanonicalRequest> {
  return toolsArb.chain((tools) =>
    fc
      .record({
        system: opt(text),
        messages: conversation(caps, tools),
        toolChoice: tools.length > 0 ? opt(fc.oneof(fc.constantFrom({ type: 'auto' as const }, { type: 'none' as const }, { type: 'required' as const }), fc.constantFrom(...tools).map((t) => ({ type: 'tool' as const, name: t.name })))) : fc.constant(undefined),
        // The parallel-calls flag means something only with tools (Anthropic has it on tool_choice).
        parallel: tools.length === 0 ? fc.constant(undefined) : caps.parallel === 2 ? opt(fc.boolean()) : caps.parallel === 1 ? opt(fc.constant(false)) : fc.constant(undefined),
        responseFormat: formatArb(caps),
        builtinTools:
          caps.imageTool === 'none' ? fc.constant(undefined) : opt(fc.constantFrom(undefined, '1024x1024', '1536x1024').map((size) => [size ? { type: 'image_generation' as const, options: { size } } : { type: 'image_generation' as const }])),
        temperature: opt(hundredths(caps.maxTemperature)),
        topP: opt(hundredths(1)),
        stop: caps.stop ? opt(fc.array(word, { minLength: 1, maxLength: 3 })) : fc.constant(undefined),
        maxOutputTokens: caps.anthropic ? fc.integer({ min: 8192, max: 32_000 }) : opt(fc.integer({ min: 1, max: 32_000 })),
        reasoning:
          caps.reasoning === 'effort'
            ? opt(fc.constantFrom('minimal', 'low', 'medium', 'high').map((effort) => ({ effort })))
            : caps.reasoning === 'budget'
              ? opt(fc.integer({ min: 1024, max: 4096 }).map((budgetTokens) => ({ budgetTokens })))
              : fc.constant(undefined),
        stream: fc.boolean(),
      })
      .map((r): CanonicalRequest => {
        // Anthropic takes no temperature with thinking on, and no parallel flag beside tool choice none.
        const temperature = caps.anthropic && r.reasoning ? undefined : r.temperature;
        const parallel = caps.parallel === 1 && r.toolChoice?.type === 'none' ? undefined : r.parallel;
        return JSON.parse(
          JSON.stringify({
            model,
            system: r.system,
            messages: r.messages,
            tools: tools.length > 0 ? tools : undefined,
            builtinTools: r.builtinTools,
            toolChoice: r.toolChoice,
            parallelToolCalls: parallel,
            responseFormat: r.responseFormat,
            temperature,
            topP: r.topP,
            stop: r.stop,
            maxOutputTokens: r.maxOutputTokens,
            reasoning: r.reasoning,
            stream: r.stream,
          }),
        ) as CanonicalRequest;
      }),
  );
}

export function responseArb(caps: Capabilities): fc.Arbitrary<CanonicalResponse> {
  return fc
    .record({
      reasoning: opt(text),
      text: opt(text),
      calls: fc.array(fc.record({ name: identifier, args: argumentsText }), { maxLength: 3 }),
      length: fc.boolean(),
      prompt: fc.integer({ min: 0, max: 100_000 }),
      cachedShare: fc.integer({ min: 0, max: 100 }),
      writeShare: fc.integer({ min: 0, max: 100 }),
      visible: fc.integer({ min: 0, max: 10_000 }),
      thoughts: fc.integer({ min: 0, max: 10_000 }),
    })
    .map((r): CanonicalResponse => {
      // The order every wire can keep: reasoning, then text, then the calls (chat has no other).
      const content: OutputPart[] = [];
      if (r.reasoning) content.push({ type: 'reasoning', text: r.reasoning });
      if (r.text || r.calls.length === 0) content.push({ type: 'text', text: r.text ?? 'ok' });
      r.calls.forEach((c, i) => content.push({ type: 'tool_call', id: `call_${i}`, name: c.name, arguments: c.args }));
      const cached = Math.floor((r.prompt * r.cachedShare) / 100);
      const written = caps.cacheWrite ? Math.floor(((r.prompt - cached) * r.writeShare) / 100) : 0;
      const reasoningTokens = caps.reasoningTokens ? r.thoughts : 0;
      const usage: Usage = { promptTokens: r.prompt, cachedTokens: cached, cacheWriteTokens: written, outputTokens: r.visible + reasoningTokens, reasoningTokens };
      const hasCalls = r.calls.length > 0;
      return { id: 'resp_1', model: 'm', content, finishReason: hasCalls ? 'tool_calls' : r.length ? 'length' : 'stop', usage };
    });
}

/** A Gemini `Schema` (OpenAPI subset) as the `@google/genai` SDK writes it with its `Type` enum,
 * with a value that schema accepts. */
export interface GeminiSchemaCase {
  readonly schema: Record<string, unknown>;
  readonly value: fc.Arbitrary<unknown>;
}

const annotations = fc.record({ description: text, title: word, example: word }, { requiredKeys: [] });

export const geminiSchemaArb: fc.Arbitrary<GeminiSchemaCase> = fc.letrec<{ node: GeminiSchemaCase }>((tie) => {
  const nullable = (c: fc.Arbitrary<GeminiSchemaCase>) =>
    fc.tuple(c, fc.boolean(), annotations).map(([inner, isNullable, notes]) => ({
      schema: { ...notes, ...inner.schema, ...(isNullable ? { nullable: true } : {}) },
      value: isNullable ? fc.oneof(inner.value, fc.constant(null)) : inner.value,
    }));
  const leaf = (schema: Record<string, unknown>, value: fc.Arbitrary<unknown>) => fc.constant({ schema, value });
  return {
    node: nullable(
      fc.oneof(
        { maxDepth: 3, withCrossShrink: true },
        leaf({ type: Type.STRING }, text),
        leaf({ type: Type.STRING, format: 'date-time' }, fc.constant('2026-01-02T03:04:05Z')),
        fc.uniqueArray(word, { minLength: 1, maxLength: 3 }).chain((e) => leaf({ type: Type.STRING, format: 'enum', enum: e }, fc.constantFrom(...e))),
        fc
          .tuple(fc.integer({ min: -10, max: 0 }), fc.integer({ min: 1, max: 10 }), fc.constantFrom(undefined, 'int32', 'int64'))
          .chain(([min, max, format]) => leaf({ type: Type.INTEGER, minimum: min, maximum: max, ...(format ? { format } : {}) }, fc.integer({ min, max }))),
        fc.constantFrom(undefined, 'float', 'double').chain((format) => leaf({ type: Type.NUMBER, ...(format ? { format } : {}) }, fc.double({ noNaN: true, noDefaultInfinity: true }))),
        leaf({ type: Type.BOOLEAN }, fc.boolean()),
        leaf({ type: Type.NULL }, fc.constant(null)),
        leaf({ type: Type.TYPE_UNSPECIFIED }, fc.jsonValue({ maxDepth: 1 })),
        fc.tuple(tie('node'), fc.integer({ min: 0, max: 2 }), fc.integer({ min: 0, max: 2 })).map(([items, min, extra]) => ({
          // int64 counts are strings in Google's JSON (the SDK's types say so).
          schema: { type: Type.ARRAY, items: items.schema, minItems: String(min), maxItems: String(min + extra) },
          value: fc.array(items.value, { minLength: min, maxLength: min + extra }),
        })),
        fc.array(tie('node'), { minLength: 1, maxLength: 3 }).map((branches) => ({ schema: { anyOf: branches.map((b) => b.schema) }, value: fc.oneof(...branches.map((b) => b.value)) })),
        fc
          .uniqueArray(identifier, { minLength: 1, maxLength: 4 })
          .chain((names) => fc.record({ props: fc.tuple(...names.map(() => tie('node'))), required: fc.subarray(names), ordering: fc.shuffledSubarray(names, { minLength: names.length }) }).map((r) => ({ names, ...r })))
          .map(({ names, props, required, ordering }) => ({
            schema: {
              type: Type.OBJECT,
              properties: Object.fromEntries(names.map((n, i) => [n, props[i]!.schema])),
              ...(required.length > 0 ? { required } : {}),
              propertyOrdering: ordering,
            },
            value: fc.record(Object.fromEntries(names.map((n, i) => [n, props[i]!.value])), { requiredKeys: required }),
          })),
      ),
    ),
  };
}).node;
