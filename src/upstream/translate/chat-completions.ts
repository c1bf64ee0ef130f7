/**
 * OpenAI Chat Completions ⇄ canonical. Wire reference: platform.openai.com/docs/api-reference/chat
 * (request, `chat.completion`, `chat.completion.chunk`). Reasoning travels as `reasoning_content`,
 * the field OpenAI-compatible reasoning vendors (DeepSeek, vLLM) use; OpenAI itself sends none.
 * The translator's three halves: requests in `chat-completions-request.ts`,
 * answers in `chat-completions-answer.ts`, streams in `chat-completions-stream.ts`; this file is the entry other code imports.
 */
import type { ProtocolTranslator } from './canonical';
import { decodeResponse, encodeResponse } from './chat-completions-answer';
import { decodeRequest, encodeRequest } from './chat-completions-request';
import { streamDecoder, streamEncoder } from './chat-completions-stream';

export { decodeRequest, encodeRequest } from './chat-completions-request';
export { decodeResponse, encodeResponse, usageOut } from './chat-completions-answer';
export { streamDecoder, streamEncoder } from './chat-completions-stream';

/** Kept here for the importers of the translator's old surface; the rule lives in `shared.ts`. */
export { effortForBudget } from './shared';

export const chatCompletionsTranslator: ProtocolTranslator = {
  protocol: 'chat-completions',
  builtinTools: { reads: ['image_generation'], sends: [] },
  decodeRequest,
  encodeRequest,
  decodeResponse,
  encodeResponse,
  streamDecoder,
  streamEncoder,
};
