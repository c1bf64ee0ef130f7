/**
 * Anthropic Messages ⇄ canonical. Wire reference: docs.anthropic.com/en/api/messages and
 * /en/docs/build-with-claude/streaming (message_start, content_block_start/delta/stop,
 * message_delta, message_stop, error).
 * The translator's three halves: requests in `messages-request.ts`,
 * answers in `messages-answer.ts`, streams in `messages-stream.ts`; this file is the entry other code imports.
 */
import type { ProtocolTranslator } from './canonical';
import { decodeResponse, encodeResponse } from './messages-answer';
import { decodeRequest, encodeRequest } from './messages-request';
import { streamDecoder, streamEncoder } from './messages-stream';

export { decodeRequest, encodeRequest } from './messages-request';
export { decodeResponse, encodeResponse, usageOut } from './messages-answer';
export { streamDecoder, streamEncoder } from './messages-stream';

export const messagesTranslator: ProtocolTranslator = {
  protocol: 'messages',
  builtinTools: { reads: [], sends: [] },
  decodeRequest,
  encodeRequest,
  decodeResponse,
  encodeResponse,
  streamDecoder,
  streamEncoder,
};
