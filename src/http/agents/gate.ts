import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { GatewayError, sendError } from '../errors';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** An agent key may call this route (only POST /v1/chat/completions). */
    readonly agentKeys?: boolean;
  }
}

/** An agent key reaches chat completions and nothing else: every other authenticated route answers
 * 403 `permission_denied` in its own error shape (the key never acts as an ordinary enterprise key). */
export const agentKeyGate = fp(
  async (app: FastifyInstance) => {
    app.addHook('onRequest', (request, reply, done) => {
      if (reply.sent || request.caller?.key.agentId == null || request.routeOptions.config?.agentKeys === true) return done();
      sendError(request, reply, new GatewayError('permission_denied', 'An agent key can only call POST /v1/chat/completions.'));
      done();
    });
  },
  { name: 'agent-key-gate', dependencies: ['auth'] },
);
