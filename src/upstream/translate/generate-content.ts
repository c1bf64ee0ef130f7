/**
 * Google Gemini generateContent ⇄ canonical. Wire reference: ai.google.dev/api/generate-content
 * (GenerateContentRequest, GenerateContentResponse; streamGenerateContent?alt=sse sends one
 * GenerateContentResponse per `data:` line) and ai.google.dev/api/caching#Content (parts).
 * Gemini has no stream events of its own: every chunk is a partial response.
 * The translator's three halves: requests in `generate-content-request.ts`,
 * answers in `generate-content-answer.ts`, streams in `generate-content-stream.ts`; this file is the entry other code imports.
 */
import type { ProtocolTranslator } from './canonical';
import { decodeResponse, encodeResponse } from './generate-content-answer';
import { decodeRequest, encodeRequest } from './generate-content-request';
import { streamDecoder, streamEncoder } from './generate-content-stream';

export { decodeRequest, encodeRequest } from './generate-content-request';
export { decodeResponse, encodeResponse, usageOut } from './generate-content-answer';
export { streamDecoder, streamEncoder } from './generate-content-stream';

export const generateContentTranslator: ProtocolTranslator = {
  protocol: 'generate-content',
  builtinTools: { reads: [], sends: [] },
  decodeRequest,
  encodeRequest,
  decodeResponse,
  encodeResponse,
  streamDecoder,
  streamEncoder,
};
