/**
 * OpenAI Responses ⇄ canonical. Wire reference: platform.openai.com/docs/api-reference/responses
 * (request, the `response` object) and /responses-streaming (typed events with `sequence_number`).
 * The translator's three halves: requests in `responses-request.ts`,
 * answers in `responses-answer.ts`, streams in `responses-stream.ts`; this file is the entry other code imports.
 */
import type { ProtocolTranslator } from './canonical';
import { decodeResponse, encodeResponse } from './responses-answer';
import { decodeRequest, encodeRequest } from './responses-request';
import { streamDecoder, streamEncoder } from './responses-stream';

export { decodeRequest, encodeRequest } from './responses-request';
export { decodeResponse, encodeResponse, usageOut } from './responses-answer';
export { streamDecoder, streamEncoder } from './responses-stream';

export const responsesTranslator: ProtocolTranslator = {
  protocol: 'responses',
  builtinTools: { reads: ['image_generation'], sends: ['image_generation'] },
  decodeRequest,
  encodeRequest,
  decodeResponse,
  encodeResponse,
  streamDecoder,
  streamEncoder,
};
