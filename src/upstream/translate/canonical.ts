/**
 * The protocol-neutral model every chat protocol is translated through. It carries what at least
 * two of the four vendor protocols can say; a protocol that cannot carry a field reports it as
 * dropped instead of inventing an equivalent.
 */
import type { ChatProtocol } from '../../config/schema';
import type { StreamEvent as WireEvent, Usage } from '../contract';

export type { Usage, WireEvent };

/** An image given by address or inline. `data:` URLs are always decoded to `base64`, so one
 * image has one canonical form whatever the client wrote. */
export type ImageSource = { readonly kind: 'url'; readonly url: string } | { readonly kind: 'base64'; readonly mediaType: string; readonly data: string };

export interface TextPart {
  readonly type: 'text';
  readonly text: string;
}
export interface ImagePart {
  readonly type: 'image';
  readonly source: ImageSource;
  /** OpenAI's `detail` hint (low, high, auto); other vendors have none. */
  readonly detail?: string;
}
export interface ToolCallPart {
  readonly type: 'tool_call';
  readonly id: string;
  readonly name: string;
  /** The arguments as JSON text, as OpenAI sends them; vendors with objects parse / stringify. */
  readonly arguments: string;
}
export interface ToolResultPart {
  readonly type: 'tool_result';
  readonly callId: string;
  /** The called tool's name when the wire says it (Gemini needs it; others find it by id). */
  readonly name?: string;
  readonly content: string;
  readonly isError?: boolean;
}
export interface ReasoningPart {
  readonly type: 'reasoning';
  readonly text: string;
  /** Anthropic's signature over a thinking block: only Anthropic can verify it. */
  readonly signature?: string;
}

export type Part = TextPart | ImagePart | ToolCallPart | ToolResultPart | ReasoningPart;

/** Tool results travel in user messages (as Anthropic and Gemini put them); a protocol with a
 * separate tool role (chat-completions, responses items) splits them out on encoding. */
export interface Message {
  readonly role: 'user' | 'assistant';
  readonly parts: readonly Part[];
}

export interface FunctionTool {
  readonly name: string;
  readonly description?: string;
  /** JSON schema of the arguments object. */
  readonly parameters: Record<string, unknown>;
}

/** A built-in tool the upstream runs itself. Only the image tool travels through translation
 * (a chat-completions client on a responses channel); its settings (`size`, `quality`, …) go to
 * the channel as the client wrote them. */
export interface BuiltinTool {
  readonly type: 'image_generation';
  readonly options?: Readonly<Record<string, unknown>>;
}

export type ToolChoice =
  | { readonly type: 'auto' }
  | { readonly type: 'none' }
  | { readonly type: 'required' }
  | { readonly type: 'tool'; readonly name: string };

export type ResponseFormat =
  | { readonly type: 'text' }
  | { readonly type: 'json_object' }
  | { readonly type: 'json_schema'; readonly name?: string; readonly schema: Record<string, unknown>; readonly strict?: boolean };

export type ReasoningEffort = 'minimal' | 'low' | 'medium' | 'high';

export interface Reasoning {
  readonly effort?: ReasoningEffort;
  /** Anthropic `budget_tokens` / Gemini `thinkingBudget`. */
  readonly budgetTokens?: number;
}

export interface CanonicalRequest {
  readonly model: string;
  readonly system?: string;
  readonly messages: readonly Message[];
  readonly tools?: readonly FunctionTool[];
  readonly builtinTools?: readonly BuiltinTool[];
  readonly toolChoice?: ToolChoice;
  readonly parallelToolCalls?: boolean;
  readonly responseFormat?: ResponseFormat;
  readonly temperature?: number;
  readonly topP?: number;
  readonly stop?: readonly string[];
  readonly maxOutputTokens?: number;
  readonly reasoning?: Reasoning;
  readonly stream: boolean;
}

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter' | 'error';

export type OutputPart = TextPart | ToolCallPart | ReasoningPart;

export interface CanonicalResponse {
  readonly id: string;
  readonly model: string;
  /** Unix seconds, when the wire says it. */
  readonly created?: number;
  readonly content: readonly OutputPart[];
  readonly finishReason: FinishReason;
  /** The gateway's billing usage (prompt includes cached and cache-write tokens, output includes
   * reasoning tokens), or null when the upstream reported none. */
  readonly usage: Usage | null;
}

/** One step of a streamed answer. Tool calls carry the ordinal `index` of the call within the
 * answer (0, 1, ...) so parallel calls stay apart; `finish` and `usage` may come in either order. */
export type CanonicalEvent =
  | { readonly type: 'start'; readonly id: string; readonly model: string; readonly created?: number }
  | { readonly type: 'text_delta'; readonly text: string }
  | { readonly type: 'reasoning_delta'; readonly text: string }
  | { readonly type: 'reasoning_signature'; readonly signature: string }
  | { readonly type: 'tool_call_start'; readonly index: number; readonly id: string; readonly name: string }
  | { readonly type: 'tool_call_delta'; readonly index: number; readonly arguments: string }
  | { readonly type: 'tool_call_end'; readonly index: number }
  /** A finished image of the built-in image tool (base64 bytes). */
  | { readonly type: 'image'; readonly mediaType: string; readonly data: string }
  | { readonly type: 'finish'; readonly reason: FinishReason }
  | { readonly type: 'usage'; readonly usage: Usage }
  | { readonly type: 'error'; readonly message: string; readonly code?: string };

/** A translation result and the names of the fields it could not carry. */
export interface Translated<T> {
  readonly value: T;
  readonly dropped: readonly string[];
}

/** Vendor SSE events in, canonical events out; `end` when the upstream stream ended. */
export interface StreamDecoder {
  push(event: WireEvent): CanonicalEvent[];
  end(): CanonicalEvent[];
}

/** Canonical events in, the client's vendor SSE events out. `end` writes the protocol's
 * terminator only when a `finish` went by: a cut stream stays visibly cut. */
export interface StreamEncoder {
  push(event: CanonicalEvent): WireEvent[];
  end(): WireEvent[];
}

/** What an encoder of answers needs besides the answer. */
export interface AnswerContext {
  /** The model id the client asked for (shown instead of the channel's id). */
  readonly model: string;
  /** Unix seconds, for wire fields that require a time. */
  readonly created: number;
  /** chat-completions: whether the client asked for the trailing usage chunk. */
  readonly includeUsage?: boolean;
  /** responses: echoed request settings (`instructions`, tools, ...) of the response object. */
  readonly request?: CanonicalRequest;
}

export interface RequestOptions {
  /** The id the upstream knows the model by. */
  readonly model: string;
  /** Output cap for a protocol that requires one (messages' `max_tokens`) when the request has none. */
  readonly defaultMaxTokens: number;
}

/** Requests, answers and streams of one vendor protocol, to and from the canonical model. */
export interface ProtocolTranslator {
  readonly protocol: ChatProtocol;
  /** Built-in tools this protocol's decoder reads from a client request (`reads`), and those its
   * encoder can ask a channel for and whose results its stream decoder reads back (`sends`). */
  readonly builtinTools: { readonly reads: readonly BuiltinTool['type'][]; readonly sends: readonly BuiltinTool['type'][] };
  /** `params`: what generate-content carries in its path (model, stream). */
  decodeRequest(body: unknown, params?: { model?: string; stream?: boolean }): Translated<CanonicalRequest>;
  encodeRequest(request: CanonicalRequest, options: RequestOptions): Translated<Record<string, unknown>>;
  decodeResponse(body: unknown): CanonicalResponse;
  encodeResponse(response: CanonicalResponse, context: AnswerContext): unknown;
  streamDecoder(): StreamDecoder;
  streamEncoder(context: AnswerContext): StreamEncoder;
}
