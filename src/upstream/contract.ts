import type { z } from 'zod';
import type { ChatProtocol, FeeTool } from '../config/schema';
import type { UsageReport } from './usage';

/** The shape errors take on an endpoint: each client protocol has its own. */
export type ErrorShape = 'chat' | 'messages' | 'generate';

/** Token usage as billed, whatever the vendor called it. `promptTokens` includes the
 * cached and cache-write tokens; `outputTokens` includes the reasoning tokens. */
export interface Usage {
  readonly promptTokens: number;
  readonly cachedTokens: number;
  readonly cacheWriteTokens: number;
  /** The part of `cacheWriteTokens` written for 1 hour (Anthropic's `ephemeral_1h_input_tokens`), billed
   * at the model's 1-hour write multiplier; the rest were written for 5 minutes. Absent: none (every
   * protocol that reports no lifetime split). */
  readonly cacheWrite1hTokens?: number;
  readonly outputTokens: number;
  readonly reasoningTokens: number;
  /** Built-in tool calls the upstream reported, by the gateway's tool name (`web_search`; `image_generation`: images the image tool made): the
   * count a per-call fee is charged on. Absent: none reported. */
  readonly toolCalls?: ToolCalls;
}

export type ToolCalls = Readonly<Partial<Record<FeeTool, number>>>;

/** What the gateway needs to know about a chat request before calling upstream. */
export interface ChatRequestInfo {
  readonly model: string;
  readonly stream: boolean;
  /** The client's explicit output cap, or null. */
  readonly maxTokens: number | null;
  /** How many answers the request asks for, each up to `maxTokens` (chat-completions `n`,
   * generate-content `generationConfig.candidateCount`); 1 on protocols without such a field. */
  readonly choices: number;
  /** The JSON whose byte length / 4 estimates the prompt tokens. */
  readonly promptDocument: unknown;
  /** Built-in tool types requested (web_search, image_generation, ...). */
  readonly builtinTools: readonly string[];
  /** The request may write prompt-cache entries that live 1 hour (Anthropic `cache_control` with `ttl: '1h'`):
   * its hold assumes the 1-hour write price. Absent: 5-minute writes at most. */
  readonly longCacheWrites?: boolean;
}

/** One server-sent event as received, re-sent to the client unchanged. */
export interface StreamEvent {
  readonly event: string | undefined;
  readonly data: string;
}

/** Watches a stream go by: usage, delivered characters, and whether it ended properly. */
export interface StreamObserver {
  /** Returns false to keep an event from the client (an event the gateway itself asked for). */
  onEvent(event: StreamEvent): boolean;
  /** The usage reported so far (the last report wins). */
  usage(): UsageReport;
  /** Characters of output delivered so far, for billing a stream that ended without usage. */
  outputChars(): number;
  /** Built-in tool calls delivered so far (as `Usage.toolCalls`), for billing a stream that ended
   * without usage: what the client received is billed either way. */
  toolCalls?(): Readonly<Record<string, number>> | undefined;
  /** True once the protocol's own end-of-stream marker went by. */
  completed(): boolean;
  /** The events that end the stream seen so far as a length stop of this protocol (finish_reason
   * `length`, stop_reason `max_tokens`, `MAX_TOKENS`, `response.incomplete` for `max_output_tokens`):
   * what the relay sends when it cuts an upstream that went on past the request's output bound. */
  lengthStop(): readonly StreamEvent[];
  /** Text the upstream sent outside the SSE framing (lines that are no SSE field, up to the next
   * event or the end), e.g. Google's bare JSON error object. True forwards it: unchanged, as one
   * write, with SSE framing; as one element with JSON-array framing. Without this method it is dropped. */
  onStray?(text: string): boolean;
}

/** A client protocol spoken natively to a channel of the same protocol. */
export interface ProtocolAdapter {
  readonly protocol: ChatProtocol;
  readonly shape: ErrorShape;
  /** The body's schema: what `inspect` validates with, and what /openapi.json describes. */
  readonly requestSchema: z.ZodType;
  /** Validates the body; returns an error message for a 400, or the request's facts. */
  inspect(body: unknown, params: { model?: string; stream?: boolean }): ChatRequestInfo | { invalid: string };
  /** Upstream path (after base_url) and the body to send, model id mapped to the channel's. */
  upstream(body: unknown, info: ChatRequestInfo, upstreamModel: string): { path: string; body: unknown };
  authHeaders(apiKey: string): Record<string, string>;
  /** Request headers passed through from the client (lower-case names); a pair
   * `[client name, upstream name]` renames one (the spec's neutral header names). */
  readonly forwardedHeaders: readonly (string | readonly [string, string])[];
  /** The usage a complete answer reports: valid, invalid (with the reason) or absent (see usage.ts). */
  usageOf(response: unknown): UsageReport;
  observe(info: ChatRequestInfo, body: unknown): StreamObserver;
  /** The message of an upstream error body, in its own vendor shape. */
  errorMessage(body: unknown): string | null;
  /** Events to send when a stream fails after it started, before the connection is
   * closed (chat-completions with built-in tools: an error chunk, then [DONE]). */
  failureTail?(info: ChatRequestInfo): readonly StreamEvent[];
  /** How a stream is written to the client: SSE frames (default), or one JSON array whose
   * elements are the events' data (generate-content without `?alt=sse`). */
  clientFraming?(query: Record<string, unknown>): 'sse' | 'json-array';
}

export const NO_USAGE: Usage = { promptTokens: 0, cachedTokens: 0, cacheWriteTokens: 0, outputTokens: 0, reasoningTokens: 0 };
