/**
 * Client compatibility as a test suite (issue 36, item 4): the recorded requests of Claude Code and Codex
 * CLI (test/compat/fixtures/) replayed against the gateway on the simulator, through the clients' own SDK
 * calls (Claude Code is an @anthropic-ai/sdk client: `beta.messages.create` / `countTokens`; Codex's requests
 * are sent as they were recorded, through the openai SDK), with the recorded headers.
 *
 * - To a channel of the client's protocol: the call succeeds (a stream ends with its terminal event) and the
 *   upstream receives every field the client sent, unchanged but for the documented rewrites (the model id
 *   becomes the channel's; a chat-completions stream asks for usage), with the vendor headers that change the
 *   request's meaning (`anthropic-version`, `anthropic-beta`, `openai-beta`). The clients' own identity headers
 *   (user-agent, x-app, originator, version, session_id) are the gateway's to read, not the upstream's; the
 *   SDK's `?beta=true` marks its beta namespace, Anthropic selects betas by the header.
 * - To a channel of each other chat protocol: the call succeeds with `X-Protocol-Translation` and exactly the
 *   fixture's `X-Protocol-Warning`, every top-level field that translation does not carry (and the client's beta
 *   header) is named there, and
 *   the conversation's last user text and every function tool reach the channel; or it is refused as the
 *   fixture says, in the client's error shape, before any upstream call.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHAT_PROTOCOLS, type ChatProtocol, type GatewayConfig } from '../../src/config/schema';
import { promptTokens, type RecordedRequest, type Simulator } from '../../src/simulator';
import { simulatorChannel, textModel } from '../support/channels';
import { startSimulatedGateway, type SimulatedGateway } from '../support/gateway';
import { agentFixtures, endpointOf, KEY_PLACEHOLDER, protocolOf, type AgentFixture, type Endpoint } from './fixtures';

/** The model served only by a channel of `protocol` (which translates for the others). */
const modelVia = (protocol: ChatProtocol) => `via-${protocol}`;
const channelVia = (protocol: ChatProtocol) => `ch-${protocol}`;

function compatConfig(sim: Simulator): GatewayConfig {
  return {
    models: CHAT_PROTOCOLS.map((p) => textModel(modelVia(p), { default_max_tokens: 32_000, price: { input: '0.10', output: '0.10' } })),
    channels: CHAT_PROTOCOLS.map((p) =>
      simulatorChannel(sim, channelVia(p), p, [modelVia(p)], {
        translation: true,
        // Codex's built-in tools: its client-run shell and the upstream's web search, offered by this channel.
        tools: p === 'responses' ? ['web_search', 'local_shell'] : [],
      }),
    ),
  } as GatewayConfig;
}

/** Request headers that change what the upstream does with the body, by client protocol: forwarded natively. */
const MEANINGFUL_HEADERS: Record<ChatProtocol, readonly string[]> = {
  messages: ['anthropic-version', 'anthropic-beta'],
  responses: ['openai-beta'],
  'chat-completions': [],
  'generate-content': [],
};

/** Top-level request fields that translation carries (into the canonical request), by client protocol; any
 * other field a client sends must be named in X-Protocol-Warning. */
const CARRIED: Record<ChatProtocol, readonly string[]> = {
  messages: ['model', 'max_tokens', 'messages', 'system', 'stream', 'tools', 'tool_choice', 'temperature', 'top_p', 'stop_sequences', 'thinking'],
  responses: ['model', 'input', 'instructions', 'stream', 'max_output_tokens', 'temperature', 'top_p', 'tools', 'tool_choice', 'parallel_tool_calls', 'text', 'reasoning'],
  'chat-completions': ['model', 'messages', 'stream', 'stream_options', 'max_tokens', 'max_completion_tokens', 'temperature', 'top_p', 'stop', 'tools', 'tool_choice', 'parallel_tool_calls', 'response_format', 'reasoning_effort'],
  'generate-content': [],
};

interface Replayed {
  readonly status: number;
  readonly headers: Headers;
  /** The SDK's URL path and query. */
  readonly path: string;
  /** A stream's events / chunks in order, or null. */
  readonly events: readonly Record<string, unknown>[] | null;
  /** The non-streamed answer, or the error body. */
  readonly body: unknown;
}

let h: SimulatedGateway;
let key: string;
beforeAll(async () => {
  h = await startSimulatedGateway(compatConfig, { chatTimeoutMs: 10_000 });
  key = (await h.t.accountWithKey()).key;
});
afterAll(() => h.close());

/** The fixture's headers with the key in place; an Authorization header replaces the SDK's x-api-key. */
function recordedHeaders(f: AgentFixture): Record<string, string | null> {
  const headers: Record<string, string | null> = Object.fromEntries(Object.entries(f.request.headers).map(([name, value]) => [name, value.replace(KEY_PLACEHOLDER, key)]));
  if ('authorization' in headers && !('x-api-key' in headers)) headers['x-api-key'] = null;
  return headers;
}

/** Sends the fixture's body (model replaced) with its headers through the SDK call its client makes. */
async function replay(f: AgentFixture, model: string): Promise<Replayed> {
  // The SDK's request at the recorded query: Claude Code's SDK marks its beta calls `?beta=true`, this one may not.
  const [recordedPath, recordedQuery = ''] = f.request.path.split('?');
  const seen: string[] = [];
  const fetchRecording: typeof fetch = (input, init) => {
    const url = new URL(String(input instanceof Request ? input.url : input));
    if (url.pathname === recordedPath) url.search = recordedQuery;
    seen.push(url.href);
    return fetch(url, init);
  };
  const headers = recordedHeaders(f);
  const body = { ...f.request.body, model } as never;
  const endpoint = endpointOf(f.request.path);
  const anthropic = new Anthropic({ apiKey: key, baseURL: h.baseUrl, maxRetries: 0, fetch: fetchRecording });
  const openai = new OpenAI({ apiKey: key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0, fetch: fetchRecording });
  const path = () => {
    const url = new URL(seen.at(-1)!);
    return url.pathname + url.search;
  };
  try {
    const sent =
      endpoint === 'messages'
        ? anthropic.beta.messages.create(body, { headers })
        : endpoint === 'count-tokens'
          ? anthropic.beta.messages.countTokens(body, { headers })
          : endpoint === 'responses'
            ? openai.responses.create(body, { headers: headers as Record<string, string> })
            : openai.chat.completions.create(body, { headers: headers as Record<string, string> });
    const { data, response } = await (sent as unknown as { withResponse(): Promise<{ data: unknown; response: Response }> }).withResponse();
    if (f.request.body.stream === true) {
      const events: Record<string, unknown>[] = [];
      for await (const event of data as AsyncIterable<Record<string, unknown>>) events.push(event);
      return { status: response.status, headers: response.headers, path: path(), events, body: null };
    }
    return { status: response.status, headers: response.headers, path: path(), events: null, body: data };
  } catch (error) {
    if (!(error instanceof Anthropic.APIError) && !(error instanceof OpenAI.APIError)) throw error;
    return { status: error.status ?? 0, headers: new Headers(error.headers as Record<string, string>), path: path(), events: null, body: error.error };
  }
}

/** The requests a channel received since `before` (its sequence number). */
const receivedBy = (protocol: ChatProtocol, before: number): RecordedRequest[] => h.sim.requests.filter((r) => r.seq > before && r.path.startsWith(`/${channelVia(protocol)}/`));
const lastSeq = () => h.sim.requests.at(-1)?.seq ?? 0;

/** That the answer is complete in its protocol: a stream ends with its terminal event, an answer is whole. */
function expectComplete(endpoint: Endpoint, replayed: Replayed): void {
  expect(replayed.status, JSON.stringify(replayed.body)).toBe(200);
  const events = replayed.events;
  if (endpoint === 'count-tokens') {
    expect((replayed.body as { input_tokens: number }).input_tokens).toBeGreaterThan(0);
  } else if (events === null) {
    const body = replayed.body as Record<string, unknown>;
    if (endpoint === 'messages') expect(body).toMatchObject({ type: 'message', stop_reason: expect.any(String) });
    else if (endpoint === 'responses') expect(body).toMatchObject({ object: 'response', status: 'completed' });
    else expect((body.choices as { finish_reason: unknown }[])[0]!.finish_reason).toEqual(expect.any(String));
  } else if (endpoint === 'messages') {
    expect(events.at(-1)!.type).toBe('message_stop');
    expect(events.filter((e) => e.type === 'message_delta').at(-1)).toMatchObject({ delta: { stop_reason: expect.any(String) } });
  } else if (endpoint === 'responses') {
    expect(events.at(-1)!.type).toBe('response.completed');
  } else {
    // The SDK ends its iteration at `data: [DONE]`; the last choice chunk carries the finish reason.
    expect(events.flatMap((c) => (c.choices as { finish_reason: unknown }[]).map((choice) => choice.finish_reason)).filter((r) => r !== null)).not.toHaveLength(0);
  }
}

/** The last user text of the recorded conversation (what the reply must answer). */
function lastUserText(f: AgentFixture): string {
  const b = f.request.body;
  const items = (Array.isArray(b.messages) ? b.messages : Array.isArray(b.input) ? b.input : []) as Record<string, unknown>[];
  const user = [...items].reverse().find((m) => m.role === 'user' && (m.type === undefined || m.type === 'message'));
  const content = user?.content;
  if (typeof content === 'string') return content;
  const texts = (content as Record<string, unknown>[] | undefined)?.filter((c) => c.type === 'text' || c.type === 'input_text').map((c) => c.text as string);
  return texts?.at(-1) ?? '';
}

/** The names of the function tools of the recorded request (client tools every protocol has). */
function functionTools(f: AgentFixture): string[] {
  const tools = (f.request.body.tools ?? []) as Record<string, unknown>[];
  return tools.flatMap((t) => {
    if (t.type === 'function') return [((t.function as { name?: string } | undefined)?.name ?? t.name) as string];
    if (t.type === undefined && typeof t.name === 'string') return [t.name];
    return [];
  });
}

const FIXTURES = agentFixtures();

describe('the recorded coding-agent requests (test/compat/fixtures)', () => {
  it('cover both clients, every Messages tool_choice and thinking variant, and Codex on both OpenAI wires', () => {
    const bodies = (client: string) => FIXTURES.filter((f) => f.client === client).map((f) => f.request.body);
    const claude = bodies('claude-code');
    expect(new Set(claude.map((b) => (b.tool_choice as { type?: string } | undefined)?.type ?? 'absent'))).toEqual(new Set(['absent', 'auto', 'any', 'tool', 'none']));
    expect(new Set(claude.map((b) => (b.thinking as { type?: string } | undefined)?.type ?? 'absent'))).toEqual(new Set(['absent', 'enabled', 'adaptive']));
    expect(FIXTURES.some((f) => endpointOf(f.request.path) === 'count-tokens')).toBe(true);
    const codex = FIXTURES.filter((f) => f.client === 'codex');
    expect(new Set(codex.map((f) => endpointOf(f.request.path)))).toEqual(new Set(['responses', 'chat-completions']));
    for (const f of FIXTURES) {
      expect(f.source.length, f.name).toBeGreaterThan(40);
      expect(JSON.stringify(f.request.headers), f.name).toContain(KEY_PLACEHOLDER);
    }
  });
});

describe.each(FIXTURES.map((f) => [f.name, f] as const))('%s', (_name, f) => {
  const endpoint = endpointOf(f.request.path);
  const client = protocolOf(endpoint);

  it(`to a ${client} channel: succeeds, and the upstream receives every field and meaningful header as sent`, async () => {
    const before = lastSeq();
    const replayed = await replay(f, modelVia(client));
    expect(replayed.path).toBe(f.request.path);
    expectComplete(endpoint, replayed);
    expect(replayed.headers.get('x-protocol-translation')).toBeNull();
    const received = receivedBy(client, before);
    expect(received).toHaveLength(1);
    const upstream = received[0]!;
    // The documented rewrites only: the channel's model id, and on a chat-completions stream the usage chunk asked for.
    const expected: Record<string, unknown> = { ...f.request.body, model: `${modelVia(client)}-upstream` };
    if (endpoint === 'chat-completions' && f.request.body.stream === true) expected.stream_options = { ...(f.request.body.stream_options as object), include_usage: true };
    expect(upstream.body).toEqual(expected);
    for (const name of MEANINGFUL_HEADERS[client]) {
      if (f.request.headers[name] !== undefined) expect(upstream.headers[name], name).toBe(f.request.headers[name]);
    }
    if (endpoint === 'count-tokens') expect((replayed.body as { input_tokens: number }).input_tokens).toBe(promptTokens('messages', upstream.body));
  });

  if (endpoint === 'count-tokens') {
    it('on a model without a Messages channel: counted locally, nothing asked upstream', async () => {
      const before = lastSeq();
      const replayed = await replay(f, modelVia('responses'));
      expectComplete(endpoint, replayed);
      expect(h.sim.requests.filter((r) => r.seq > before)).toHaveLength(0);
    });
    return;
  }

  it.each(CHAT_PROTOCOLS.filter((p) => p !== client))('to a %s channel: translated, every field it drops named in X-Protocol-Warning', async (via) => {
    const outcome = f.translated?.[via];
    const before = lastSeq();
    const replayed = await replay(f, modelVia(via));
    if (process.env.COMPAT_RECORD) console.log(`RECORD ${f.name} ${via} ${replayed.status} ${JSON.stringify(replayed.headers.get('x-protocol-warning'))} ${replayed.status !== 200 ? JSON.stringify(replayed.body) : ''}`);
    expect(outcome, `the fixture states what a ${via} channel does with it`).toBeDefined();
    if (outcome && 'refused' in outcome) {
      expect(replayed.status).toBe(400);
      // The client's own error shape: Anthropic's `{type: error, error: {type, message}}`, OpenAI's `{error: {message, type, code}}`
      // (the SDKs hand over the `error` object).
      if (client === 'messages') expect(replayed.body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: expect.any(String) } });
      else expect(replayed.body).toMatchObject({ code: outcome.refused, type: 'invalid_request_error', message: expect.any(String) });
      expect(receivedBy(via, before)).toHaveLength(0);
      return;
    }
    expectComplete(endpoint, replayed);
    expect(replayed.headers.get('x-protocol-translation')).toBe(`${client}->${via}`);
    const warning = replayed.headers.get('x-protocol-warning');
    const named = warning === null ? [] : warning.split(', ');
    expect(new Set(named)).toEqual(new Set(outcome!.warning));
    // Independently of the fixture's list: every top-level field translation does not carry is named.
    for (const field of Object.keys(f.request.body).filter((k) => !CARRIED[client].includes(k) && f.request.body[k] !== null)) {
      expect(named.some((n) => n === field || n.startsWith(`${field}.`)), `${field} is named`).toBe(true);
    }
    // The vendor headers another vendor cannot be given (its betas) are named too.
    for (const name of MEANINGFUL_HEADERS[client].filter((n) => !n.endsWith('-version') && f.request.headers[n] !== undefined)) expect(named, name).toContain(name);
    const received = receivedBy(via, before);
    expect(received.length).toBeGreaterThanOrEqual(1);
    const sent = JSON.stringify(received[0]!.body);
    expect(sent).toContain(JSON.stringify(lastUserText(f)).slice(1, -1));
    for (const tool of functionTools(f)) expect(sent, `tool ${tool}`).toContain(`"${tool}"`);
  });
});
