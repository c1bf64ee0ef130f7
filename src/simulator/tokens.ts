/**
 * The simulator's token arithmetic. Every count it reports is one of these functions, so a test can
 * compute the expected usage of any request without talking to the simulator.
 *
 *   tokens(text)        = ceil(utf8Bytes(text) / 4)
 *   prompt tokens       = tokens(JSON.stringify(promptDocument(protocol, body)))
 *   output tokens       = tokens(reply text + Σ (tool name + tool arguments JSON)) (+ reasoning tokens)
 *   cached tokens       = floor(prompt / 2) when the system prompt contains "[cache]", else 0
 *   reasoning tokens    = 8 / 16 / 32 for effort low / medium (default) / high, when reasoning is on
 */
import type { Protocol } from './types';

export const CACHE_MARKER = '[cache]';

export function utf8Bytes(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/** ceil(UTF-8 bytes / 4). */
export function countTokens(text: string): number {
  return Math.ceil(utf8Bytes(text) / 4);
}

/**
 * The part of a request body whose JSON text is counted as the prompt:
 * - chat-completions: `messages`
 * - responses: `{instructions, input}` (an absent `instructions` is dropped by JSON.stringify)
 * - messages: `{system, messages}`
 * - generate-content: `{systemInstruction, contents}`
 * - images: `prompt`; videos: `content`; speech: `input`
 * - music, transcripts, avatars: their text field (`prompt` or `lyrics`, `url`, `source_url`)
 * Tool definitions are not counted.
 */
export function promptDocument(protocol: Protocol, body: unknown): unknown {
  const b = (body ?? {}) as Record<string, unknown>;
  switch (protocol) {
    case 'chat-completions':
      return b.messages ?? [];
    case 'responses':
      return { instructions: b.instructions, input: b.input };
    case 'messages':
      return { system: b.system, messages: b.messages };
    case 'generate-content':
      return { systemInstruction: b.systemInstruction, contents: b.contents };
    case 'images':
      return typeof b.prompt === 'string' ? b.prompt : '';
    case 'videos':
      return b.content ?? [];
    case 'speech':
      return typeof b.input === 'string' ? b.input : '';
    case 'music':
      return b.prompt ?? b.lyrics ?? '';
    case 'transcripts':
      return b.url ?? '';
    case 'avatars':
      return b.source_url ?? '';
  }
}

/** Prompt tokens of a request body: ceil(bytes(JSON.stringify(promptDocument)) / 4). */
export function promptTokens(protocol: Protocol, body: unknown): number {
  return countTokens(JSON.stringify(promptDocument(protocol, body)) ?? '');
}

/** Tokens reported as cached when the request asks for it with the cache marker. */
export function cachedTokensFor(prompt: number): number {
  return Math.floor(prompt / 2);
}

export type ReasoningEffort = 'low' | 'medium' | 'high';

export function reasoningTokensFor(effort: ReasoningEffort | undefined): number {
  if (effort === undefined) return 0;
  return effort === 'low' ? 8 : effort === 'high' ? 32 : 16;
}

/** Output tokens of the visible reply: the text plus each tool call's name and arguments. */
export function outputTokens(text: string, toolCalls: readonly { name: string; arguments: string }[] = []): number {
  return countTokens(text + toolCalls.map((c) => c.name + c.arguments).join(''));
}

/** The longest prefix of `text` (whole code points) that fits in `maxTokens` tokens. */
export function truncateToTokens(text: string, maxTokens: number): string {
  const limit = Math.max(0, maxTokens) * 4;
  if (utf8Bytes(text) <= limit) return text;
  let out = '';
  let bytes = 0;
  for (const ch of text) {
    const b = utf8Bytes(ch);
    if (bytes + b > limit) break;
    out += ch;
    bytes += b;
  }
  return out;
}

const PAD = ' lorem ipsum dolor sit amet';

/** `text` padded (with ASCII filler words) or cut so that it is exactly `n` tokens = 4n bytes long. */
export function fitToTokens(text: string, n: number): string {
  // PAD is ASCII: one byte a character (one repeat, not a loop re-measuring a growing string).
  const missing = n * 4 - utf8Bytes(text);
  let out = missing > 0 ? text + PAD.repeat(Math.ceil(missing / PAD.length)) : text;
  out = truncateToTokens(out, n);
  // a multi-byte character at the cut can leave us short; pad with spaces
  while (utf8Bytes(out) < n * 4) out += ' ';
  return out;
}
