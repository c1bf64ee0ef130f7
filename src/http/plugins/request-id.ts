import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

/** What a client's `x-request-id` may be to be echoed: visible ASCII, at most 200 characters. */
const ECHOABLE = /^[\x21-\x7e]{1,200}$/;

/**
 * The `x-request-id` of an answer: the gateway's request id, the one its call-log row, its receipt and
 * `x-gateway-trace` show (what the OpenAI SDK reads as `_request_id`); a client that sent its own (visible
 * ASCII within 200 characters) gets that one echoed instead, to match its logs to its calls.
 */
export function answerRequestId(request: FastifyRequest): string {
  const sent = request.headers['x-request-id'];
  return typeof sent === 'string' && ECHOABLE.test(sent) ? sent : request.id;
}

export const setRequestIdHeader = (request: FastifyRequest, reply: FastifyReply): void => {
  reply.header('x-request-id', answerRequestId(request));
};

/** `x-request-id` on every answer, refusals and streams included (their headers are written from the reply's). */
export const requestIdPlugin = fp(async (app: FastifyInstance) => {
  app.addHook('onRequest', (request, reply, done) => {
    setRequestIdHeader(request, reply);
    done();
  });
});
