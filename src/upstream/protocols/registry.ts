/**
 * The chat protocols, one registration each: everything the gateway switches on a chat protocol for.
 * The relay's native table and translated path, the channel probe, the shutdown frames, the token
 * counts and the chat routes read it, so a new chat protocol is its name in `CHAT_PROTOCOLS`
 * (src/config/schema.ts, what the config accepts), its adapter (`./<protocol>.ts`), its translator
 * (src/upstream/translate/<protocol>.ts) and one entry here; the `Record` over `ChatProtocol` does not
 * compile until the entry is written. The recipe is in src/upstream/README.md.
 *
 * It lives in upstream/ (below http/ and channels/, which read it) and imports only upstream modules.
 */
import type { ChatProtocol } from '../../config/schema';
import type { ProtocolAdapter } from '../contract';
import type { ProtocolTranslator } from '../translate/canonical';
import { chatCompletionsTranslator } from '../translate/chat-completions';
import { generateContentTranslator } from '../translate/generate-content';
import { messagesTranslator } from '../translate/messages';
import { responsesTranslator } from '../translate/responses';
import { chatCompletions } from './chat-completions';
import { generateContent } from './generate-content';
import { messages } from './messages';
import { responses } from './responses';

/** A frame of the client's protocol written as the last words of a stream; `pauseFirst`: written as a
 * read of its own (what went before leaves first), the way the vendor sends a bare error object. */
export interface ShutdownFrame {
  readonly text: string;
  readonly pauseFirst?: boolean;
}

/** How a protocol's token-count endpoint is asked upstream (Anthropic's `count_tokens`, Gemini's `:countTokens`). */
export interface TokenCount {
  /** The body `inspect` validates, from the client's count request (which may lack what a call needs). */
  inspected(body: unknown): unknown;
  /** The upstream's count request: its path and the client's body naming the upstream model. */
  request(upstreamModel: string, body: unknown): { path: string; body: unknown };
  /** The count in the upstream's answer (anything else: the local estimate answers). */
  count(answer: unknown): unknown;
}

export interface ChatProtocolEntry {
  /** The native adapter: a client of this protocol on a channel of the same protocol. */
  readonly adapter: ProtocolAdapter;
  /** To and from the canonical model, for a client and a channel of different protocols. */
  readonly translator: ProtocolTranslator;
  /** The channel probe's request (src/channels/probe.ts): the smallest call of the protocol, one short
   * user turn and a one- or few-token answer; `params` when the model is not in the body. */
  readonly probe: { body(model: string): unknown; params?(model: string): { model: string } };
  /** The error frame that ends a stream the gateway's shutdown cut (src/http/protocols/shutdown-frame.ts),
   * given the error body in the endpoint's shape and the error itself (code `gateway_shutting_down`). */
  shutdownFrame(body: unknown, error: { readonly code: string; readonly message: string }): ShutdownFrame;
  /** The protocol's token-count endpoint, when it has one (src/http/protocols/count-tokens.ts). */
  readonly tokenCount?: TokenCount;
}

const sse = (event: string | null, data: unknown) => `${event === null ? '' : `event: ${event}\n`}data: ${JSON.stringify(data)}\n\n`;
const asObject = (body: unknown) => (body ?? {}) as Record<string, unknown>;

export const CHAT_PROTOCOL_REGISTRY: Readonly<Record<ChatProtocol, ChatProtocolEntry>> = {
  'chat-completions': {
    adapter: chatCompletions,
    translator: chatCompletionsTranslator,
    probe: { body: (model) => ({ model, messages: [{ role: 'user', content: 'ping' }], max_tokens: 1 }) },
    // `data: {"error": {...}}`, no `[DONE]`.
    shutdownFrame: (body) => ({ text: sse(null, body) }),
  },
  messages: {
    adapter: messages,
    translator: messagesTranslator,
    probe: { body: (model) => ({ model, max_tokens: 1, messages: [{ role: 'user', content: 'ping' }] }) },
    // `event: error` with `{type: "error", error: {type: "overloaded_error", message}}`.
    shutdownFrame: (body) => ({ text: sse('error', body) }),
    tokenCount: {
      // `max_tokens` is not needed to count.
      inspected: (body) => (body !== null && typeof body === 'object' && !Array.isArray(body) ? { max_tokens: 1, ...body } : body),
      request: (upstreamModel, body) => ({ path: '/v1/messages/count_tokens', body: { ...asObject(body), model: upstreamModel } }),
      count: (answer) => (answer as { input_tokens?: unknown } | null)?.input_tokens,
    },
  },
  responses: {
    adapter: responses,
    translator: responsesTranslator,
    probe: { body: (model) => ({ model, input: 'ping', max_output_tokens: 16 }) },
    // `event: error` with `{type: "error", code, message, param}`.
    shutdownFrame: (_body, error) => ({ text: sse('error', { type: 'error', code: error.code, message: error.message, param: null }) }),
  },
  'generate-content': {
    adapter: generateContent,
    translator: generateContentTranslator,
    probe: {
      body: () => ({ contents: [{ role: 'user', parts: [{ text: 'ping' }] }], generationConfig: { maxOutputTokens: 1 } }),
      params: (model) => ({ model }),
    },
    // Over SSE the bare error object outside the SSE framing, as Google sends it (`@google/genai` raises
    // `ApiError` 503 on it).
    shutdownFrame: (body) => ({ text: JSON.stringify(body, null, 2), pauseFirst: true }),
    tokenCount: {
      inspected: (body) => body,
      // Gemini's countTokens may wrap the request: `{generateContentRequest: {...}}`, naming the model.
      request: (upstreamModel, body) => {
        const b = asObject(body);
        const wrapped = b.generateContentRequest as Record<string, unknown> | undefined;
        const sent = wrapped && typeof wrapped === 'object' ? { ...b, generateContentRequest: { ...wrapped, model: `models/${upstreamModel}` } } : b;
        return { path: `/v1beta/models/${encodeURIComponent(upstreamModel)}:countTokens`, body: sent };
      },
      count: (answer) => (answer as { totalTokens?: unknown } | null)?.totalTokens,
    },
  },
};

/** The registration of a chat protocol. */
export const chatProtocol = (protocol: ChatProtocol): ChatProtocolEntry => CHAT_PROTOCOL_REGISTRY[protocol];

/** The native adapter of a chat protocol. */
export const nativeAdapter = (protocol: ChatProtocol): ProtocolAdapter => CHAT_PROTOCOL_REGISTRY[protocol].adapter;

/** The translator of a chat protocol. */
export const translatorOf = (protocol: ChatProtocol): ProtocolTranslator => CHAT_PROTOCOL_REGISTRY[protocol].translator;
