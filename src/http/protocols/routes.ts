import type { FastifyInstance } from 'fastify';
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
    app.post('/v1/chat/completions', { config: { auth: 'key', shape: 'chat' } }, (request, reply) =>
      relayChat(deps, chatCompletions, request, reply),
    );
    app.post('/v1/messages', { config: { auth: 'key', shape: 'messages' } }, (request, reply) => relayChat(deps, messages, request, reply));
    app.post('/v1/responses', { config: { auth: 'key', shape: 'chat' } }, (request, reply) => relayChat(deps, responses, request, reply));
    // `{model}:generateContent` / `{model}:streamGenerateContent`: the model is part of the path.
    app.post<{ Params: { '*': string } }>('/v1beta/models/*', { config: { auth: 'key', shape: 'generate' } }, (request, reply) => {
      const match = /^(.+):(generateContent|streamGenerateContent)$/.exec(request.params['*']);
      if (!match) throw new GatewayError('not_found', `no route for POST ${redactUrl(request.url).split('?')[0]}; use {model}:generateContent or {model}:streamGenerateContent`);
      return relayChat(deps, generateContent, request, reply, { model: decodeURIComponent(match[1]!), stream: match[2] === 'streamGenerateContent' });
    });
  };
}
