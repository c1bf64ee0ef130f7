import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { nativeAdapter } from '../../upstream/protocols/registry';
import { countPromptTokens, GenerateCountTokensBody } from './count-tokens';
import { GatewayError } from '../errors';
import { redactUrl } from '../../metrics/redact';
import type { RouteDoc } from '../openapi/route-doc';
import { relayChat, type RelayDeps } from './relay';
import { prepareAgentCall, type AgentCallDeps } from '../agents/agent-call';
import { usability } from '../../commands/key/decider';
import { AUTH_MESSAGES } from '../plugins/auth';

// Each endpoint with its protocol's native adapter (src/upstream/protocols/registry.ts).
const chatCompletions = nativeAdapter('chat-completions');
const messages = nativeAdapter('messages');
const responses = nativeAdapter('responses');
const generateContent = nativeAdapter('generate-content');

const MessagesHeaders = {
  'anthropic-version': z.string().optional().describe('Passed to the upstream; 2023-06-01 when absent.'),
  'vendor-version': z.string().optional().describe('The neutral name of anthropic-version (an anthropic-version header wins).'),
  'anthropic-beta': z.string().optional().describe('Passed to a Messages channel (calls and token counts); named in X-Protocol-Warning on a translated call.'),
};

const ResponsesHeaders = {
  'openai-beta': z.string().optional().describe('Passed to a Responses channel; named in X-Protocol-Warning on a translated call.'),
};

const COUNT_TOKENS_DOC: RouteDoc = {
  operationId: 'countMessageTokens',
  summary: 'Count the input tokens of a messages request (free)',
  description: 'The body of `POST /v1/messages` (`max_tokens` not needed). Asked of the upstream when a usable channel of the model speaks the Messages protocol, else (or when it gives no count) estimated by the gateway (about 4 bytes of the prompt a token); no call is billed or logged.',
  tags: ['chat'],
  headers: MessagesHeaders,
  responses: { 200: { description: '`{input_tokens}`.' } },
};

/** What a chat call may end in besides its answer (the relay's own refusals are 400s). */
const CHAT_ERRORS = {
  403: 'The upstream refused the call (its status and message are passed through).',
  502: 'No channel could be reached: `upstream_unreachable`.',
  503: 'The model has no channel on this endpoint, or every channel failed: `no_channel_available`.',
  504: 'The call ran past its time limit: `upstream_timeout`.',
};
const ANSWER = (what: string) => ({ description: what, mediaTypes: ['application/json', 'text/event-stream'] });

const chatDoc = (operationId: string, summary: string, body: z.ZodType, answer: string, extra: Partial<RouteDoc> = {}): RouteDoc => ({
  operationId,
  summary,
  tags: ['chat'],
  body: { json: body },
  responses: { 200: ANSWER(answer) },
  errors: CHAT_ERRORS,
  ...extra,
});


/** `alt=sse`: the stream as server-sent events; otherwise one JSON array written element by element. */
const GenerateQuery = z.looseObject({ alt: z.string().optional().describe('`sse`: server-sent events; otherwise a stream is one JSON array, written element by element.') });
const GenerateParams = { model: z.string().min(1).describe('The model id (a `models/` prefix is dropped).') };

const GENERATE_COUNT_TOKENS_DOC: RouteDoc = {
  operationId: 'countContentTokens',
  summary: 'Count the input tokens of a generate-content request (free)',
  description:
    'The body of `:generateContent`, or `{generateContentRequest: {...}}` as `ai.models.countTokens()` sends it. Asked of the upstream when a usable channel of the model speaks the generate-content protocol, else (or when it gives no count) estimated by the gateway (about 4 bytes of the prompt a token); no call is billed or logged.',
  tags: ['chat'],
  path: '/v1beta/models/{model}:countTokens',
  params: GenerateParams,
  // One route serves the three paths: the query its siblings declare (`alt` means nothing to a count).
  query: GenerateQuery,
  body: { json: GenerateCountTokensBody },
  responses: { 200: { description: '`{totalTokens}`.' } },
};

/** The chat endpoints, one per client protocol, all through the same relay. */
export function chatRoutes(deps: RelayDeps, agents: AgentCallDeps) {
  return async (app: FastifyInstance) => {
    const openapi = {
      chat: chatDoc('createChatCompletion', 'Chat completion (chat-completions protocol)', chatCompletions.requestSchema, 'The completion; with `stream: true`, server-sent chunks ending with `data: [DONE]`.'),
      messages: chatDoc('createMessage', 'Message (messages protocol)', messages.requestSchema, 'The message; with `stream: true`, server-sent events ending with `message_stop`.', { headers: MessagesHeaders }),
      responses: chatDoc('createResponse', 'Response (responses protocol)', responses.requestSchema, 'The response object; with `stream: true`, server-sent events ending with `response.completed`.', { headers: ResponsesHeaders }),
      generate: [
        chatDoc('generateContent', 'Generate content (generate-content protocol)', generateContent.requestSchema, 'The answer.', {
          path: '/v1beta/models/{model}:generateContent',
          params: GenerateParams,
          query: GenerateQuery,
        }),
        chatDoc('streamGenerateContent', 'Generate content, streamed (generate-content protocol)', generateContent.requestSchema, 'The answer, streamed: server-sent events with `alt=sse`, else one JSON array.', {
          path: '/v1beta/models/{model}:streamGenerateContent',
          params: GenerateParams,
          query: GenerateQuery,
        }),
        GENERATE_COUNT_TOKENS_DOC,
      ],
    };
    // `callLog`: a refusal before the relay (402, 429, an unreadable body) still gets its row.
    // The one route an agent key reaches: its body is rewritten for its agent first (src/http/agents).
    app.post(
      '/v1/chat/completions',
      { config: { auth: 'key', shape: 'chat', agentKeys: true, callLog: { endpoint: chatCompletions.protocol }, openapi: openapi.chat } },
      async (request, reply) => {
        if (request.caller?.key.agentId == null) return relayChat(deps, chatCompletions, request, reply);
        // Revocation of an agent key is immediate on every instance (Errors rule 9): its state is read
        // from the log for each call, not taken from authentication's cache (up to a second old).
        const key = await deps.ledger.key(request.caller.keyId);
        const refusal = key.status === 'none' ? 'revoked' : usability(key, deps.now());
        if (refusal) throw new GatewayError('invalid_api_key', AUTH_MESSAGES[refusal]);
        const call = await prepareAgentCall(agents, request);
        request.body = call.body;
        return relayChat(deps, chatCompletions, request, reply, { pin: call.session });
      },
    );
    app.post('/v1/messages', { config: { auth: 'key', shape: 'messages', callLog: { endpoint: messages.protocol }, openapi: openapi.messages } }, (request, reply) =>
      relayChat(deps, messages, request, reply),
    );
    // Claude Code asks on every turn: the upstream's count, else a local estimate; free (src/http/protocols/count-tokens.ts).
    app.post('/v1/messages/count_tokens', { config: { auth: 'key', shape: 'messages', free: true, openapi: COUNT_TOKENS_DOC } }, async (request) => ({
      input_tokens: await countPromptTokens(deps, messages, request),
    }));
    app.post('/v1/responses', { config: { auth: 'key', shape: 'chat', callLog: { endpoint: responses.protocol }, openapi: openapi.responses } }, (request, reply) =>
      relayChat(deps, responses, request, reply),
    );
    // `{model}:generateContent` / `{model}:streamGenerateContent`: the model is part of the path.
    const pathModel = (request: FastifyRequest) => {
      const match = /^(.+):[^:]*$/.exec((request.params as { '*'?: string })['*'] ?? '');
      return match ? safeDecode(match[1]!) : undefined;
    };
    const callLog = { endpoint: generateContent.protocol, model: pathModel };
    app.post<{ Params: { '*': string } }>('/v1beta/models/*', { config: { auth: 'key', shape: 'generate', callLog, openapi: openapi.generate } }, (request, reply) => {
      const counted = /^(.+):countTokens$/.exec(request.params['*']);
      if (counted) return countPromptTokens(deps, generateContent, request, { model: safeDecode(counted[1]!) }).then((totalTokens) => ({ totalTokens }));
      const match = /^(.+):(generateContent|streamGenerateContent)$/.exec(request.params['*']);
      if (!match) throw new GatewayError('not_found', `no route for POST ${redactUrl(request.url).split('?')[0]}; use {model}:generateContent, {model}:streamGenerateContent or {model}:countTokens`);
      return relayChat(deps, generateContent, request, reply, { model: safeDecode(match[1]!), stream: match[2] === 'streamGenerateContent' });
    });
  };
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
