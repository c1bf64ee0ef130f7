/**
 * Issue 33, item 7, for the chat protocols' richer answers: an upstream's answer with reasoning and a tool
 * call, in each protocol's own shape, passed through natively and re-encoded by the translators for each
 * of the three other client protocols, validates against the answer schema `/openapi.json` publishes for
 * the client's protocol (ajv). The upstream is scripted (the simulator answers text only). On PGlite, or on
 * Postgres when DATABASE_URL is set.
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatProtocol } from '../../src/config/schema';
import { ANSWERS, MODELS, ScriptedUpstream, TRANSLATED_MODELS, callGateway, scriptedConfig, type Scripted } from '../chat/scripted-upstream';
import { startTestGateway, type TestGateway } from '../support/gateway';

type Json = Record<string, any>;

const PROTOCOLS: ChatProtocol[] = ['chat-completions', 'messages', 'responses', 'generate-content'];
const OPERATION: Record<ChatProtocol, string> = {
  'chat-completions': 'createChatCompletion',
  messages: 'createMessage',
  responses: 'createResponse',
  'generate-content': 'generateContent',
};

/** The named answer each protocol's operation publishes. */
const COMPONENT: Record<ChatProtocol, string> = {
  'chat-completions': 'ChatCompletion',
  messages: 'Message',
  responses: 'Response',
  'generate-content': 'GenerateContentResponse',
};

const json = (body: unknown): Scripted => ({ contentType: 'application/json', body: JSON.stringify(body) });
const ARGS = { city: 'Paris' };

/** Per upstream protocol: an answer with reasoning (where the protocol has it), text and a tool call. */
const TOOL_ANSWERS: Record<ChatProtocol, Scripted> = {
  'chat-completions': json({
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 1_700_000_000,
    model: 'm',
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: 'Let me look.', refusal: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: JSON.stringify(ARGS) } }] },
        finish_reason: 'tool_calls',
        logprobs: null,
      },
    ],
    usage: { prompt_tokens: 20, completion_tokens: 9, total_tokens: 29 },
  }),
  messages: json({
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    model: 'm',
    content: [
      { type: 'thinking', thinking: 'The user wants the weather.', signature: 'sig' },
      { type: 'text', text: 'Let me look.' },
      { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: ARGS },
    ],
    stop_reason: 'tool_use',
    stop_sequence: null,
    usage: { input_tokens: 20, output_tokens: 9 },
  }),
  responses: json({
    id: 'resp_1',
    object: 'response',
    created_at: 1_700_000_000,
    status: 'completed',
    model: 'm',
    output: [
      { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'The user wants the weather.' }] },
      { type: 'message', id: 'msg_1', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Let me look.', annotations: [] }] },
      { type: 'function_call', id: 'fc_1', call_id: 'call_1', name: 'get_weather', arguments: JSON.stringify(ARGS), status: 'completed' },
    ],
    usage: { input_tokens: 20, output_tokens: 9, total_tokens: 29 },
  }),
  'generate-content': json({
    candidates: [
      {
        content: { role: 'model', parts: [{ text: 'The user wants the weather.', thought: true }, { text: 'Let me look.' }, { functionCall: { name: 'get_weather', args: ARGS } }] },
        finishReason: 'STOP',
        index: 0,
      },
    ],
    usageMetadata: { promptTokenCount: 20, candidatesTokenCount: 9, totalTokenCount: 29 },
    modelVersion: 'm',
  }),
};

const PARAMETERS = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
/** The tool offered, in the client protocol's shape. */
const TOOLS: Record<ChatProtocol, object> = {
  'chat-completions': { tools: [{ type: 'function', function: { name: 'get_weather', parameters: PARAMETERS } }] },
  messages: { tools: [{ name: 'get_weather', input_schema: PARAMETERS }] },
  responses: { tools: [{ type: 'function', name: 'get_weather', parameters: PARAMETERS }] },
  'generate-content': { tools: [{ functionDeclarations: [{ name: 'get_weather', parameters: PARAMETERS }] }] },
};

let upstream: ScriptedUpstream;
let t: TestGateway;
let base: string;
let key: string;
let doc: Json;
const validators = new Map<string, ValidateFunction>();

beforeAll(async () => {
  upstream = await ScriptedUpstream.start();
  t = await startTestGateway({ config: scriptedConfig(upstream.url), chatTimeoutMs: 5000 });
  await t.gateway.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(t.gateway.app.server.address() as { port: number }).port}`;
  ({ key } = await t.accountWithKey());
  doc = (await (await fetch(`${base}/openapi.json`)).json()) as Json;
});

afterAll(async () => {
  await t?.close();
  await upstream?.close();
});

const COMPONENTS = 'https://gateway.test/components';

/** The published 200 JSON schema of a chat protocol's operation, compiled against the document's components. */
function published(protocol: ChatProtocol): ValidateFunction {
  const cached = validators.get(protocol);
  if (cached) return cached;
  const ajv = new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true });
  ajv.addSchema({ $id: COMPONENTS, $defs: doc.components.schemas });
  const [op] = Object.values(doc.paths as Json)
    .flatMap((item) => Object.values(item as Json))
    .filter((o: Json) => o.operationId === OPERATION[protocol]);
  const schema = (op as Json).responses['200'].content['application/json'].schema;
  expect(schema, OPERATION[protocol]).toEqual({ $ref: `#/components/schemas/${COMPONENT[protocol]}` });
  const validate = ajv.compile(JSON.parse(JSON.stringify(schema).replaceAll('"#/components/schemas/', `"${COMPONENTS}#/$defs/`)));
  validators.set(protocol, validate);
  return validate;
}

/** The gateway's answer to `client` for `model`, the upstream answering `scripted`: 200 and as published. */
async function expectPublished(client: ChatProtocol, model: string, scripted: Scripted, fields: object = {}): Promise<Json> {
  upstream.answer(scripted);
  const response = await callGateway(base, key, client, false, { model, fields });
  const body = (await response.json()) as Json;
  expect(response.status, `${client} ${model}: ${JSON.stringify(body)}`).toBe(200);
  const validate = published(client);
  expect(validate(body), `${client} ${model}: ${JSON.stringify(validate.errors, null, 1)}\n${JSON.stringify(body)}`).toBe(true);
  return body;
}

describe('chat answers with reasoning and a tool call validate against the published schemas', () => {
  it('passed through from a channel of the client’s own protocol', async () => {
    for (const protocol of PROTOCOLS) await expectPublished(protocol, MODELS[protocol], TOOL_ANSWERS[protocol], TOOLS[protocol]);
  });

  it('re-encoded by the translators for each other client protocol, the tool call kept', async () => {
    for (const upstreamProtocol of PROTOCOLS)
      for (const client of PROTOCOLS.filter((p) => p !== upstreamProtocol)) {
        const body = await expectPublished(client, TRANSLATED_MODELS[upstreamProtocol], TOOL_ANSWERS[upstreamProtocol], TOOLS[client]);
        expect(JSON.stringify(body), `${upstreamProtocol} -> ${client}`).toContain('get_weather');
      }
  });

  it('plain text answers, translated both ways, too', async () => {
    const usage: Record<ChatProtocol, unknown> = {
      'chat-completions': { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
      messages: { input_tokens: 3, output_tokens: 2 },
      responses: { input_tokens: 3, output_tokens: 2, total_tokens: 5 },
      'generate-content': { promptTokenCount: 3, candidatesTokenCount: 2, totalTokenCount: 5 },
    };
    for (const upstreamProtocol of PROTOCOLS)
      for (const client of PROTOCOLS) {
        const model = client === upstreamProtocol ? MODELS[client] : TRANSLATED_MODELS[upstreamProtocol];
        await expectPublished(client, model, ANSWERS[upstreamProtocol].body(usage[upstreamProtocol]));
      }
  });
});
