import type { FastifyInstance, FastifyRequest } from 'fastify';
import { chatCompletions } from '../../upstream/protocols/chat-completions';
import { generateContent } from '../../upstream/protocols/generate-content';
import { messages } from '../../upstream/protocols/messages';
import { responses } from '../../upstream/protocols/responses';
import { GatewayError } from '../errors';
import { redactUrl } from '../intake/redact';
import { relayChat, type RelayDeps } from './relay';

/** The chat endpoints, one per client protocol, all through the same relay. */
export function chatRoutes(deps: RelayDeps) {
  return async (app: FastifyInstance) => {
    // `callLog`: a refusal before the relay (402, 429, an unreadable body) still gets its row.
    app.post('/v1/chat/completions', { config: { auth: 'key', shape: 'chat', callLog: { endpoint: chatCompletions.protocol } } }, (request, reply) =>
      relayChat(deps, chatCompletions, request, reply),
    );
    app.post('/v1/messages', { config: { auth: 'key', shape: 'messages', callLog: { endpoint: messages.protocol } } }, (request, reply) =>
      relayChat(deps, messages, request, reply),
    );
    app.post('/v1/responses', { config: { auth: 'key', shape: 'chat', callLog: { endpoint: responses.protocol } } }, (request, reply) =>
      relayChat(deps, responses, request, reply),
    );
    // `{model}:generateContent` / `{model}:streamGenerateContent`: the model is part of the path.
    const pathModel = (request: FastifyRequest) => {
      const match = /^(.+):[^:]*$/.exec((request.params as { '*'?: string })['*'] ?? '');
      return match ? safeDecode(match[1]!) : undefined;
    };
    const callLog = { endpoint: generateContent.protocol, model: pathModel };
    app.post<{ Params: { '*': string } }>('/v1beta/models/*', { config: { auth: 'key', shape: 'generate', callLog } }, (request, reply) => {
      const match = /^(.+):(generateContent|streamGenerateContent)$/.exec(request.params['*']);
      if (!match) throw new GatewayError('not_found', `no route for POST ${redactUrl(request.url).split('?')[0]}; use {model}:generateContent or {model}:streamGenerateContent`);
      return relayChat(deps, generateContent, request, reply, { model: decodeURIComponent(match[1]!), stream: match[2] === 'streamGenerateContent' });
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
