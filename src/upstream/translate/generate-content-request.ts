/** Gemini generateContent requests ⇄ canonical requests: contents and parts (calls matched to results by
 * id, else name), function declarations, toolConfig, generationConfig. */
import { jsonSchemaFromGemini } from './gemini-schema';
import type { CanonicalRequest, FunctionTool, Message, Part, ResponseFormat, ToolChoice } from './canonical';
import { argumentsObject, asArray, asRecord, budgetOf, compact, dropBuiltinTools, HISTORY_REASONING, isRecord, num, str, toolNameFor, unreadKeys, type Json } from './shared';

const READ = ['contents', 'systemInstruction', 'generationConfig', 'tools', 'toolConfig', 'model'];
const CONFIG_READ = ['temperature', 'topP', 'maxOutputTokens', 'stopSequences', 'responseMimeType', 'responseSchema', 'responseJsonSchema', 'thinkingConfig'];

/** A tool result's text as Gemini's `response` object (which must be an object): JSON objects as
 * they are, anything else under `result`, the key Google's function-calling guide uses. */
function responseObject(content: string): Json {
  try {
    const value: unknown = JSON.parse(content);
    if (isRecord(value) && !(Object.keys(value).length === 1 && typeof value.result === 'string')) return value;
  } catch {
    // not JSON: wrapped below
  }
  return { result: content };
}

function responseText(response: unknown): string {
  const r = asRecord(response);
  const keys = Object.keys(r);
  if (keys.length === 1 && typeof r.result === 'string') return r.result;
  if (keys.length === 1 && typeof r.output === 'string') return r.output;
  return JSON.stringify(r);
}

const MIME_BY_EXTENSION: Record<string, string> = { png: 'image/png', gif: 'image/gif', webp: 'image/webp', jpg: 'image/jpeg', jpeg: 'image/jpeg' };
/** `fileData` needs a MIME type; an address usually shows it in its extension. */
const mimeOfUrl = (url: string) => MIME_BY_EXTENSION[/\.([a-z]+)(?:[?#].*)?$/i.exec(url)?.[1]?.toLowerCase() ?? ''] ?? 'image/jpeg';

function decodeContents(contents: unknown[], dropped: Set<string>): Message[] {
  const messages: Message[] = [];
  let generated = 0;
  /** Calls without an id waiting for their result, by name (Gemini matches results by name). */
  const pending: { name: string; id: string }[] = [];
  for (const entry of contents) {
    const c = asRecord(entry);
    const role = c.role === 'model' ? 'assistant' : 'user';
    const parts: Part[] = [];
    for (const item of asArray(c.parts)) {
      const p = asRecord(item);
      if (typeof p.text === 'string') {
        if (p.thought === true) {
          if (role === 'assistant') parts.push({ type: 'reasoning', text: p.text });
        } else parts.push({ type: 'text', text: p.text });
      } else if (isRecord(p.inlineData)) {
        const mediaType = str(p.inlineData.mimeType) ?? '';
        if (mediaType.startsWith('image/')) parts.push({ type: 'image', source: { kind: 'base64', mediaType, data: str(p.inlineData.data) ?? '' } });
        else dropped.add(`contents.parts.inlineData.${mediaType}`);
      } else if (isRecord(p.fileData)) {
        parts.push({ type: 'image', source: { kind: 'url', url: str(p.fileData.fileUri) ?? '' } });
      } else if (isRecord(p.functionCall)) {
        const name = str(p.functionCall.name) ?? '';
        const id = str(p.functionCall.id) ?? `call_${generated++}`;
        pending.push({ name, id });
        parts.push({ type: 'tool_call', id, name, arguments: JSON.stringify(p.functionCall.args ?? {}) });
      } else if (isRecord(p.functionResponse)) {
        const name = str(p.functionResponse.name) ?? '';
        let callId = str(p.functionResponse.id);
        const at = pending.findIndex((call) => (callId ? call.id === callId : call.name === name));
        if (at >= 0) callId ??= pending.splice(at, 1)[0]!.id;
        parts.push({ type: 'tool_result', callId: callId ?? `call_${generated++}`, name, content: responseText(p.functionResponse.response) });
      } else dropped.add(`contents.parts.${Object.keys(p)[0] ?? 'unknown'}`);
    }
    messages.push({ role, parts });
  }
  return messages;
}

function decodeToolChoice(v: unknown): ToolChoice | undefined {
  const config = asRecord(asRecord(v).functionCallingConfig);
  const names = asArray(config.allowedFunctionNames).filter((n): n is string => typeof n === 'string');
  switch (config.mode) {
    case 'AUTO':
    case 'VALIDATED':
      return { type: 'auto' };
    case 'NONE':
      return { type: 'none' };
    case 'ANY':
      return names.length === 1 ? { type: 'tool', name: names[0]! } : { type: 'required' };
    default:
      return undefined;
  }
}

function decodeFormat(config: Json): ResponseFormat | undefined {
  if (config.responseMimeType !== 'application/json') return undefined;
  // `responseJsonSchema` is JSON Schema already; `responseSchema` is Gemini's OpenAPI subset.
  const schema = config.responseJsonSchema ?? jsonSchemaFromGemini(config.responseSchema);
  return isRecord(schema) ? { type: 'json_schema', schema } : { type: 'json_object' };
}

const DECLARATION_READ = ['name', 'description', 'parameters', 'parametersJsonSchema'];

export function decodeRequest(body: unknown, params: { model?: string; stream?: boolean } = {}): { value: CanonicalRequest; dropped: string[] } {
  const b = asRecord(body);
  const dropped = new Set(unreadKeys(b, READ));
  const config = asRecord(b.generationConfig);
  for (const key of unreadKeys(config, CONFIG_READ)) dropped.add(`generationConfig.${key}`);
  const system = typeof b.systemInstruction === 'string' ? b.systemInstruction : asArray(asRecord(b.systemInstruction).parts).map((p) => str(asRecord(p).text) ?? '').join('\n');
  const tools: FunctionTool[] = [];
  for (const tool of asArray(b.tools)) {
    for (const [key, value] of Object.entries(asRecord(tool))) {
      if (key !== 'functionDeclarations') {
        dropped.add(`tools.${key}`);
        continue;
      }
      for (const declaration of asArray(value)) {
        const d = asRecord(declaration);
        for (const key of unreadKeys(d, DECLARATION_READ, 'tools.functionDeclarations.')) dropped.add(key);
        // `parametersJsonSchema` is JSON Schema already; `parameters` is Gemini's OpenAPI subset.
        const parameters = d.parametersJsonSchema ?? jsonSchemaFromGemini(d.parameters);
        tools.push(compact({ name: str(d.name) ?? '', description: str(d.description), parameters: asRecord(parameters) }));
      }
    }
  }
  const thinking = asRecord(config.thinkingConfig);
  const budget = num(thinking.thinkingBudget);
  const value: CanonicalRequest = compact({
    model: (params.model ?? str(b.model) ?? '').replace(/^models\//, ''),
    system: b.systemInstruction === undefined ? undefined : system,
    messages: decodeContents(asArray(b.contents), dropped),
    tools: tools.length > 0 ? tools : undefined,
    toolChoice: decodeToolChoice(b.toolConfig),
    responseFormat: decodeFormat(config),
    temperature: num(config.temperature),
    topP: num(config.topP),
    stop: asArray(config.stopSequences).length > 0 ? asArray(config.stopSequences).filter((s): s is string => typeof s === 'string') : undefined,
    maxOutputTokens: num(config.maxOutputTokens),
    // -1 is Gemini's "dynamic thinking": the model decides, closest to a medium effort.
    reasoning: budget === undefined || budget === 0 ? undefined : budget < 0 ? { effort: 'medium' as const } : { budgetTokens: budget },
    stream: params.stream === true,
  });
  return { value, dropped: [...dropped] };
}

export function encodeRequest(request: CanonicalRequest): { value: Json; dropped: string[] } {
  const dropped = new Set<string>();
  dropBuiltinTools(request, dropped);
  const contents: Json[] = [];
  request.messages.forEach((message, at) => {
    const parts: Json[] = [];
    for (const p of message.parts) {
      switch (p.type) {
        case 'text':
          parts.push({ text: p.text });
          break;
        case 'image':
          if (p.detail) dropped.add('image.detail');
          parts.push(
            p.source.kind === 'base64'
              ? { inlineData: { mimeType: p.source.mediaType, data: p.source.data } }
              : { fileData: { mimeType: mimeOfUrl(p.source.url), fileUri: p.source.url } },
          );
          break;
        case 'tool_call':
          parts.push({ functionCall: { id: p.id, name: p.name, args: argumentsObject(p.arguments) } });
          break;
        case 'tool_result':
          if (p.isError) dropped.add('tool_result.is_error');
          parts.push({ functionResponse: { id: p.callId, name: p.name ?? toolNameFor(request.messages, at, p.callId) ?? '', response: responseObject(p.content) } });
          break;
        case 'reasoning':
          // Gemini takes back only its own thought signatures; reasoning text is not input.
          dropped.add(HISTORY_REASONING);
          break;
      }
    }
    if (parts.length > 0) contents.push({ role: message.role === 'assistant' ? 'model' : 'user', parts });
  });
  if (request.parallelToolCalls === false) dropped.add('parallel_tool_calls');
  const choice = request.toolChoice;
  const format = request.responseFormat;
  const budget = budgetOf(request);
  const generationConfig = compact({
    temperature: request.temperature,
    topP: request.topP,
    maxOutputTokens: request.maxOutputTokens,
    stopSequences: request.stop ? [...request.stop] : undefined,
    responseMimeType: format && format.type !== 'text' ? 'application/json' : undefined,
    responseJsonSchema: format?.type === 'json_schema' ? format.schema : undefined,
    thinkingConfig: budget !== undefined ? { thinkingBudget: budget } : undefined,
  });
  const value = compact({
    contents,
    systemInstruction: request.system !== undefined ? { parts: [{ text: request.system }] } : undefined,
    tools: request.tools ? [{ functionDeclarations: request.tools.map((t) => compact({ name: t.name, description: t.description, parametersJsonSchema: t.parameters })) }] : undefined,
    toolConfig: !choice
      ? undefined
      : {
          functionCallingConfig:
            choice.type === 'tool' ? { mode: 'ANY', allowedFunctionNames: [choice.name] } : { mode: { auto: 'AUTO', none: 'NONE', required: 'ANY' }[choice.type] },
        },
    generationConfig: Object.keys(generationConfig).length > 0 ? generationConfig : undefined,
  });
  return { value, dropped: [...dropped] };
}
