import type { FastifyInstance } from 'fastify';
import { chatCompletions } from '../../upstream/protocols/chat-completions';
import { relayChat, type RelayDeps } from './relay';

/** The chat endpoints, one per client protocol, all through the same relay. */
export function chatRoutes(deps: RelayDeps) {
  return async (app: FastifyInstance) => {
    app.post('/v1/chat/completions', { config: { auth: 'key', shape: 'chat' } }, (request, reply) =>
      relayChat(deps, chatCompletions, request, reply),
    );
  };
}
