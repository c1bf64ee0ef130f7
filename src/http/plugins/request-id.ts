import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

/** What a client's `x-request-id` may be to be echoed: visible ASCII, at most 200 characters. */
const ECHOABLE = /^[\x21-\x7e]{1,200}$/;

/**
 * A client's `x-request-id` echoed on the answer (streams included: their headers are written from the
 * reply's), so that a client can match its logs to its calls; the gateway's own id stays in `x-gateway-trace`.
 * A value that is not visible ASCII within 200 characters is not echoed.
 */
export const requestIdEchoPlugin = fp(async (app: FastifyInstance) => {
  app.addHook('onRequest', (request, reply, done) => {
    const id = request.headers['x-request-id'];
    if (typeof id === 'string' && ECHOABLE.test(id)) reply.header('x-request-id', id);
    done();
  });
});
