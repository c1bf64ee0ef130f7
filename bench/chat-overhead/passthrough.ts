/**
 * The reference the issue compares the gateway with: a bare fastify + undici passthrough of
 * `POST /v1/chat/completions` (no auth, no ledger, no validation), the upstream's answer piped
 * back as it arrives. Run by hand by `passthrough-compare.ts`, never by CI.
 *
 *   node --import tsx bench/chat-overhead/passthrough.ts --port 8091 --upstream http://127.0.0.1:8090
 */
import Fastify from 'fastify';
import { Agent, request } from 'undici';

const arg = (name: string) => {
  const i = process.argv.indexOf(name);
  return i === -1 ? undefined : process.argv[i + 1];
};
const port = Number(arg('--port') ?? 8091);
const upstream = arg('--upstream') ?? 'http://127.0.0.1:8090';
const agent = new Agent({ keepAliveTimeout: 30_000, connections: 512 });

const app = Fastify({ logger: false, bodyLimit: 100 * 1024 * 1024 });
app.post('/v1/chat/completions', async (req, reply) => {
  const response = await request(`${upstream}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sim-key' },
    body: JSON.stringify(req.body),
    dispatcher: agent,
  });
  const type = response.headers['content-type'];
  return reply.code(response.statusCode).type(typeof type === 'string' ? type : 'application/json').send(response.body);
});
await app.listen({ port, host: '127.0.0.1' });
process.stdout.write(`passthrough listening on http://127.0.0.1:${port}\n`);
const stop = () => void app.close().then(() => process.exit(0));
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
